// lab-ts: the JavaScript SDK's test partner, in TypeScript. Every text command exercises one part
// of the SDK; tests/tests/all/js_partners.rs drives it through the real host.

import {
  DataItem,
  Decision,
  EndReason,
  Outcome,
  Product,
  Task,
  config,
  definePartner,
  log,
} from "@aiphost/sdk";

function text(input: DataItem[]): string {
  return input
    .map((item) => item.asText())
    .filter((t): t is string => t !== null)
    .join(" ")
    .trim();
}

function count(task: Task, key: string, kv = task.kv): number {
  const n = ((kv.getJson(key) as number | null) ?? 0) + 1;
  kv.setJson(key, n);
  return n;
}

export default definePartner({
  decide(_task: Task, input: DataItem[]): Decision {
    return text(input) === "reject" ? Decision.reject("told to reject") : Decision.accept();
  },

  work(task: Task, input: DataItem[]): Outcome {
    const said = text(input);
    const [command, ...rest] = said.split(/\s+/);
    log.info("lab-ts working", { task: task.id, command });
    switch (command) {
      case "":
        return Outcome.needInput([DataItem.text("Send me some text."), DataItem.data({ missing: ["text"] })]);
      case "count": {
        const turns = count(task, "turns");
        const total = count(task, "total", task.agentKv);
        return Outcome.needInput([DataItem.text(`turn ${turns}`), DataItem.data({ turns, total })]);
      }
      case "throw":
        throw new Error("boom on purpose");
      case "fail":
        return Outcome.fail("told to fail");
      case "abort":
        return Outcome.abort("told to abort");
      case "bad":
        return "not an outcome" as unknown as Outcome;
      case "config": {
        const name = rest[0] ?? "";
        try {
          return done(DataItem.data({ value: config.get(name) }));
        } catch (e) {
          return done(DataItem.data({ error: (e as { code?: string }).code ?? String(e) }));
        }
      }
      case "stream": {
        const n = Number(rest[0] ?? "3");
        for (let i = 0; i < n; i++) {
          task.emitChunk(new Product("stream").withItem(DataItem.text(`part ${i}`)), i > 0, i === n - 1);
        }
        return Outcome.done();
      }
      case "info":
        return done(
          DataItem.data({
            id: task.id,
            sessionId: task.sessionId,
            leaderId: task.leaderId,
            params: task.params,
            isStart: task.isStart,
            isContinue: task.isContinue,
            initialState: task.initialState,
            state: task.state(),
            maxProductsBytes: task.maxProductsBytes,
            productsBytes: task.productsBytes,
            turns: task.kv.getJson("turns"),
          }),
        );
      case "reply":
        return Outcome.reply([new Product("answer").withItem(DataItem.text("42"))], [DataItem.text("here it is")]);
      default:
        return done(DataItem.text(said.toUpperCase()));
    }
  },

  completed(task: Task, _reason: EndReason): void {
    task.agentKv.setJson("last-completed", task.id);
  },

  canceled(task: Task, reason: EndReason): void {
    task.kv.delete("turns");
    task.agentKv.setJson("last-canceled", { task: task.id, reason });
  },
});

function done(item: DataItem): Outcome {
  return Outcome.done([new Product("answer").named("answer").withItem(item)]);
}
