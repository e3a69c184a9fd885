//! Echo: accepts every task and returns its input as a product.
//!
//! Each start or continue produces the product `echo`, whose items are the command's input; a
//! continue replaces the previous product.

use aiphost_sdk::{DataItem, Outcome, Partner, Product, Task};

/// The echo partner.
pub struct Echo;

impl Partner for Echo {
    fn work(_task: &mut Task, input: Vec<DataItem>) -> Outcome {
        Outcome::Done(vec![Product::new("echo").named("echo").with_items(input)])
    }
}

aiphost_sdk::export!(Echo);
