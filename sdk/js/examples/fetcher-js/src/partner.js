// fetcher-js: outbound HTTP with the Web's `fetch`, on the StarlingMonkey backend (the build picks
// it because partner.toml asks for [capabilities] http). The JavaScript twin of plugins/fetcher:
//
// - `get URL`: a GET through the host's wasi:http; the product `fetched` holds {"status", "body"},
//   or {"error"} with the message of what went wrong (the host refused: a host not granted, a
//   private address; or the request failed);
// - `config NAME`: the product `fetched` holds {"value"} or {"error"} (the ConfigError's code).

import { DataItem, Outcome, Product, config, definePartner } from "@aiphost/sdk";

async function get(url) {
  try {
    const response = await fetch(url, { headers: { accept: "text/plain" } });
    return { status: response.status, body: await response.text() };
  } catch (e) {
    return { error: String(e?.message ?? e) };
  }
}

export default definePartner({
  async work(_task, input) {
    const command = (input.map((item) => item.asText()).find((t) => t !== null) ?? "").trim();
    let result;
    if (command.startsWith("get ")) {
      result = await get(command.slice(4).trim());
    } else if (command.startsWith("config ")) {
      try {
        result = { value: config.get(command.slice(7).trim()) };
      } catch (e) {
        result = { error: e.code ?? String(e) };
      }
    } else {
      return Outcome.fail(`unknown command ${JSON.stringify(command)}: send \`get URL\` or \`config NAME\``);
    }
    return Outcome.done([new Product("fetched").named("fetched").withItem(DataItem.data(result))]);
  },
});
