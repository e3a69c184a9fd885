//! AIP on the wire: its two dialects (commands and tasks parsed and rendered), its events and
//! notices, the parameters of its `notification/*` methods and group mode's messages. Each
//! reads into or renders from the model (`aiphost-model`).

pub mod dialect;
pub mod event;
pub mod group;
pub mod notice;
pub mod notification;

pub use dialect::Dialect;
