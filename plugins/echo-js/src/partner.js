// Echo: accepts every task and returns its input as a product (the JavaScript twin of plugins/echo).
//
// Each start or continue produces the product `echo`, whose items are the command's input; a
// continue replaces the previous product.

import { Outcome, Product } from "@aiphost/sdk";

export default {
  work(_task, input) {
    return Outcome.done([new Product("echo").named("echo").withItems(input)]);
  },
};
