// @aiphost/sdk: write AIP partners for aiphost in JavaScript or TypeScript.
//
// A partner is an object (or a class) with `decide` / `work` / `completed` / `canceled`, exported
// as the default export of its entry module; `aiphost agent build` (or the SDK's `aiphost-build`)
// turns it into a WebAssembly component. The component plumbing (WIT, bindings) stays in the SDK.

export { DataItem, File, Product } from "./items.js";
export { Form, formAnswer, formAnswerItem } from "./forms.js";
export { Channel, Decision, EndReason, Kv, KvError, Outcome, ReportError, State, Task, isFinal } from "./task.js";
export { ConfigError, config, log } from "./runtime.js";

/**
 * Returns `partner` unchanged: a typed way to write one (`export default definePartner({...})`).
 * @template T
 * @param {T} partner
 * @returns {T}
 */
export function definePartner(partner) {
  return partner;
}
