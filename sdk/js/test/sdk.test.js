// The SDK's own tests: the run loop's semantics (the same as the Rust SDK's), the data types, and
// the testing helper. `node --test` in sdk/js.

import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { DataItem, Decision, File, KvError, Outcome, Product, ReportError, config, log } from "../src/index.js";
import { utf8Decode, utf8Encode } from "../src/items.js";
import { handle } from "../src/runtime.js";
import { MockHost } from "../src/testing.js";

test("the shipped WIT is a byte-equal copy of the repository's wit/partner.wit", (t) => {
  const repoWit = fileURLToPath(new URL("../../../wit/partner.wit", import.meta.url));
  if (!existsSync(repoWit)) return t.skip("not inside the aiphost repository");
  const shipped = readFileSync(new URL("../wit/partner.wit", import.meta.url));
  assert.ok(shipped.equals(readFileSync(repoWit)), "sdk/js/wit/partner.wit differs from wit/partner.wit: copy it again");
});

const echo = {
  work(task, input) {
    assert.equal(task.params.size, 5);
    return Outcome.done([new Product("echo").withItems(input)]);
  },
};

test("start accepts, works and awaits completion with the products", async () => {
  const host = new MockHost();
  const turn = await host.start(echo, [DataItem.text("hi")], { params: { size: 5 } });
  assert.equal(turn.error, null);
  assert.deepEqual(turn.statuses.map((s) => s.state), ["accepted", "working", "awaiting-completion"]);
  assert.equal(turn.state, "awaiting-completion");
  assert.equal(turn.products[0].id, "echo");
  assert.equal(turn.products[0].dataItems[0].asText(), "hi");
  // A continue replaces the product.
  const again = await host.continue(echo, [DataItem.data({ a: 1 })], { params: { size: 5 } });
  assert.deepEqual(again.statuses.map((s) => s.state), ["awaiting-completion"]);
  assert.deepEqual(again.products[0].dataItems[0].asData(), { a: 1 });
  assert.equal(again.products[0].dataItems.length, 1);
  const done = await host.complete(echo);
  assert.equal(done.state, "completed");
});

const picky = {
  decide(task, input) {
    assert.ok(task.isStart);
    return input.length ? Decision.accept() : Decision.reject("nothing to do");
  },
  work(task, input) {
    const turns = (task.kv.getJson("turns") ?? 0) + 1;
    task.kv.setJson("turns", turns);
    switch (input[0]?.asText()) {
      case "fail":
        return Outcome.fail("cannot");
      case "abort":
        return Outcome.abort("gave up");
      case "throw":
        throw new RangeError("out of range");
      case "nonsense":
        task.setStatus("completed", []);
        return Outcome.done();
      default:
        return Outcome.needInput([DataItem.text(`turn ${turns}`), DataItem.data({ missing: ["x"] })]);
    }
  },
  canceled(task, reason) {
    assert.equal(reason, "timeout");
    task.kv.delete("turns");
    task.agentKv.setJson("canceled", task.id);
  },
};

test("reject reports the reason", async () => {
  const turn = await new MockHost().start(picky, []);
  assert.equal(turn.state, "rejected");
  assert.deepEqual(turn.statuses.map((s) => s.state), ["rejected"]);
  assert.equal(turn.message[0].asText(), "nothing to do");
});

test("need input, kv across turns, fail and abort", async () => {
  const host = new MockHost();
  let turn = await host.start(picky, [DataItem.text("hello")]);
  assert.equal(turn.state, "awaiting-input");
  assert.equal(turn.message[0].asText(), "turn 1");
  assert.deepEqual(turn.message[1].asData(), { missing: ["x"] });
  turn = await host.continue(picky, [DataItem.text("more")]);
  assert.equal(turn.message[0].asText(), "turn 2");
  assert.equal(host.kvJson("task", "turns"), 2);
  turn = await host.continue(picky, [DataItem.text("fail")]);
  assert.equal(turn.state, "failed");
  assert.equal(turn.message[0].asText(), "cannot");
  assert.equal(turn.error, null);

  await host.start(picky, [DataItem.text("x")]);
  turn = await host.continue(picky, [DataItem.text("abort")]);
  assert.equal(turn.error, "gave up");
  assert.equal(turn.state, "failed");
});

test("an exception fails the task with a short reason and logs the stack at error level", async () => {
  const host = new MockHost();
  const turn = await host.start(picky, [DataItem.text("throw")]);
  assert.equal(turn.state, "failed");
  assert.equal(turn.error, "work threw RangeError: out of range");
  const line = turn.logs.find((l) => l.level === "error");
  assert.ok(line, "an error line");
  assert.match(line.message, /out of range/);
  assert.match(line.fields.stack, /RangeError: out of range\n\s+at /);
});

test("a non-Outcome from work and a non-Decision from decide are the partner's errors", async () => {
  let turn = await new MockHost().start({ work: () => "oops" }, [DataItem.text("x")]);
  assert.match(turn.error, /^work threw TypeError: work returned string "oops"; return an Outcome/);
  turn = await new MockHost().start({ decide: () => true, work: () => Outcome.done() }, []);
  assert.match(turn.error, /^decide threw TypeError: decide returned boolean true/);
  // A new task whose invocation fails is rejected by the host.
  assert.equal(turn.state, "rejected");
});

test("a refused report of the partner's own is an exception; the SDK's own become errors", async () => {
  const host = new MockHost();
  await host.start(picky, [DataItem.text("x")]);
  const turn = await host.continue(picky, [DataItem.text("nonsense")]);
  assert.equal(turn.error, "work threw ReportError: invalid state transition: working -> completed");

  // The Leader canceled meanwhile: the SDK's reports get task-ended and it stops quietly.
  const calls = [];
  const ended = {
    setStatus: (state) => {
      calls.push(state);
      throw { tag: "task-ended" };
    },
    emitProductChunk: () => {
      calls.push("chunk");
      throw { tag: "task-ended" };
    },
    currentState: () => "canceled",
    log: () => {},
  };
  const inv = invocation("continue", [DataItem.text("x")]);
  assert.equal(handle({ work: (_t, i) => Outcome.done([new Product("p").withItems(i)]) }, inv, ended), undefined);
  assert.deepEqual(calls, ["chunk"]);

  // An invalid transition of the SDK's own report ends the invocation with an error.
  const refusing = { ...ended, setStatus: () => { throw { tag: "invalid-transition", val: "accepted -> working" }; } };
  assert.throws(
    () => handle(echo, invocation("start", []), refusing),
    (e) => e === "the host refused a report: invalid state transition: accepted -> working",
  );
});

test("products over maxProductsBytes: the host fails the task and the partner stops quietly", async () => {
  const host = new MockHost({ maxProductsBytes: 4 });
  const turn = await host.start({ work: () => Outcome.done([new Product("big").withItem(DataItem.text("12345"))]) }, [
    DataItem.text("x"),
  ]);
  assert.equal(turn.error, null);
  assert.equal(turn.state, "failed");
});

test("streamed chunks append, and complete / cancel reach the hooks with their reason", async () => {
  const streamer = {
    work(task) {
      for (let i = 0; i < 3; i++) task.emitChunk(new Product("s").withItem(DataItem.text(`part ${i}`)), i > 0, i === 2);
      return Outcome.done();
    },
  };
  const host = new MockHost();
  const turn = await host.start(streamer, []);
  assert.deepEqual(turn.products[0].dataItems.map((i) => i.asText()), ["part 0", "part 1", "part 2"]);

  await host.start(picky, [DataItem.text("x")]);
  assert.equal(host.kvJson("task", "turns"), 1);
  const canceled = await host.cancel(picky, "timeout");
  assert.equal(canceled.state, "canceled");
  assert.equal(canceled.error, null);
  assert.equal(host.kvJson("task", "turns"), null);
  assert.equal(host.kvJson("agent", "canceled"), host.taskId);
});

test("async partners are awaited", async () => {
  const slow = {
    async decide() {
      await null;
      return Decision.accept();
    },
    async work(_task, input) {
      await new Promise((r) => setTimeout(r, 1));
      if (input.length === 0) throw new Error("async boom");
      return Outcome.ask("more?");
    },
  };
  const turn = await new MockHost().start(slow, [DataItem.text("x")]);
  assert.equal(turn.state, "awaiting-input");
  const failed = await new MockHost().start(slow, []);
  assert.equal(failed.error, "work threw Error: async boom");
});

test("a class is instantiated, config and log reach the host", async () => {
  class Configured {
    work() {
      log.info("configured", { model: config.get("MODEL"), n: 3 });
      let missing;
      try {
        config.get("OTHER");
      } catch (e) {
        missing = e.code;
      }
      return Outcome.done([new Product("c").withItem(DataItem.data({ missing, fallback: config.getOr("UNSET", "dflt") }))]);
    }
  }
  const host = new MockHost({ config: { MODEL: "small" }, granted: ["MODEL", "UNSET"] });
  const turn = await host.start(Configured, []);
  assert.deepEqual(turn.logs[0], { level: "info", message: "configured", fields: { model: "small", n: "3" } });
  assert.deepEqual(turn.products[0].dataItems[0].asData(), { missing: "not-granted", fallback: "dflt" });
});

test("kv errors are KvErrors", async () => {
  const host = new MockHost({ kvLimit: 8 });
  const turn = await host.start(
    {
      work(task) {
        const errors = [];
        try {
          task.kv.set("big", "123456789");
        } catch (e) {
          errors.push(e instanceof KvError && e.code);
        }
        task.kv.set("raw", "not json");
        try {
          task.kv.getJson("raw");
        } catch (e) {
          errors.push(e instanceof KvError && e.code);
        }
        task.agentKv.set("bytes", new Uint8Array([1, 2]));
        errors.push(task.kv.get("bytes"), [...task.agentKv.get("bytes")], task.kv.getText("raw"));
        return Outcome.done([new Product("e").withItem(DataItem.data({ errors }))]);
      },
    },
    [],
  );
  assert.deepEqual(turn.products[0].dataItems[0].asData().errors, ["too-large", "json", null, [1, 2], "not json"]);
});

test("malformed invocations are errors of the SDK, not of the partner", () => {
  const host = { log: () => {} };
  const inv = invocation("start", []);
  inv.commandParams = "[]";
  assert.throws(() => handle(echo, inv, host), (e) => typeof e === "string" && e.includes("commandParams"));
});

test("data items, files and products", () => {
  assert.deepEqual(DataItem.data(42).asData(), { value: 42 });
  assert.deepEqual(DataItem.data({ a: 1 }).asData(), { a: 1 });
  assert.equal(DataItem.text("x").asData(), null);
  const f = DataItem.file(File.bytes("PNG").named("a.png").withMimeType("image/png"));
  assert.deepEqual([...f.asFile().bytes], [80, 78, 71]);
  assert.equal(f.contentBytes(), 3);
  assert.equal(DataItem.text("é").contentBytes(), 2);
  assert.equal(DataItem.data({ a: 1 }).contentBytes(), 7);
  assert.throws(() => new Product("p").withItem("text"), /expected a DataItem/);
  assert.throws(() => DataItem.text("x").withMetadata([1]), /plain object/);
  assert.equal(new ReportError("products-too-large", 10).endsTask, true);
  for (const s of ["", "abc", "é", "€", "😀 mixed ✓", "\u0000"]) {
    assert.deepEqual(utf8Encode(s), new Uint8Array(Buffer.from(s, "utf8")));
    assert.equal(utf8Decode(utf8Encode(s)), s);
  }
  assert.equal(utf8Decode(new Uint8Array([0xff, 0x41])), "\ufffdA");
});

function invocation(event, items) {
  return {
    event: { tag: event },
    taskId: "t-1",
    sessionId: "s-1",
    leaderId: null,
    state: event === "start" ? null : "working",
    dataItems: items.map((i) => ({ kind: { tag: "text", val: i.asText() }, metadata: null })),
    maxProductsBytes: 100n,
    productsBytes: 30n,
    commandParams: '{"size": 5}',
  };
}
