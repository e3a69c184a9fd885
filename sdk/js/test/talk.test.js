// Tests of what a partner of aiphost:partner@0.2.0 can say besides statuses and products: streamed
// text, tool activity, usage, forms, failures with a code and plain replies, through the run loop
// and the mock host's checks (the host's rules). `node --test` in sdk/js.

import assert from "node:assert/strict";
import { test } from "node:test";

import { DataItem, Decision, Form, Outcome, Product, ReportError, formAnswer, formAnswerItem } from "../src/index.js";
import { handle } from "../src/runtime.js";
import { InvalidAnswer, MockHost } from "../src/testing.js";

const TRIP = {
  type: "object",
  required: ["city", "days"],
  properties: { city: { type: "string" }, days: { type: "integer", minimum: 1 } },
};

/** A partner in the manner of the concierge: the first word of the text says what to do. */
const concierge = {
  decide(_task, input) {
    const text = input[0]?.asText() ?? "";
    return text.startsWith("reply ") ? Decision.reply(text.slice(6)) : Decision.accept();
  },
  work(task, input) {
    const trip = formAnswer(input, "trip");
    if (trip !== null) {
      task.say(`${trip.city.toUpperCase()} for ${trip.days} days`);
      return Outcome.done();
    }
    const [verb, ...rest] = (input[0]?.asText() ?? "").split(" ");
    const x = rest.join(" ");
    switch (verb) {
      case "think":
        task.think("Let me think about ");
        task.think(x);
        task.say("thought about ");
        task.say(x);
        return Outcome.done();
      case "tool":
        task.toolCall("call-1", "lookup", { query: x });
        task.toolResult("call-1", { found: x });
        task.usage({ model: "tiny", inputTokens: 12, outputTokens: 3 });
        task.say(`found ${x}`, { last: true });
        return Outcome.done();
      case "form":
        return Outcome.ask({ form: new Form({ requestId: "trip", title: "Trip", schema: TRIP }), message: "Where to?" });
      case "fail":
        return Outcome.fail({ code: "CONCIERGE_FAILED", message: x, detail: { word: x } });
      default:
        return Outcome.ask("what now?");
    }
  },
};

test("think and say stream into products; the SDK closes them before the task rests", async () => {
  const host = new MockHost();
  const turn = await host.start(concierge, [DataItem.text("think tea")]);
  assert.equal(turn.error, null);
  assert.deepEqual(turn.statuses.map((s) => s.state), ["accepted", "working", "awaiting-completion"]);
  assert.equal(turn.reasoning, "Let me think about tea");
  assert.equal(turn.answer, "thought about tea");
  // Four deltas of the partner's, then one empty `last` delta per product it left open.
  assert.deepEqual(
    turn.deltas.map((d) => [d.productId, d.channel, d.text, d.last]),
    [
      ["reasoning", "reasoning", "Let me think about ", false],
      ["reasoning", "reasoning", "tea", false],
      ["answer", "answer", "thought about ", false],
      ["answer", "answer", "tea", false],
      ["reasoning", "reasoning", "", true],
      ["answer", "answer", "", true],
    ],
  );
  // The host merges the deltas of a channel into one text item per product.
  const products = Object.fromEntries(turn.products.map((p) => [p.id, p.dataItems]));
  assert.equal(products.answer.length, 1);
  assert.equal(products.answer[0].asText(), "thought about tea");
  assert.deepEqual(products.answer[0].metadata, { "aiphost.kind": "answer" });
  assert.equal(products.reasoning[0].asText(), "Let me think about tea");
  assert.deepEqual(products.reasoning[0].metadata, { "aiphost.kind": "reasoning" });
});

test("tool calls, results and usage are recorded in order; a closed product is not closed again", async () => {
  const turn = await new MockHost().start(concierge, [DataItem.text("tool maps")]);
  assert.deepEqual(
    turn.activity.map((a) => a.kind),
    ["tool-call", "tool-result", "usage", "text-delta"],
  );
  assert.deepEqual(turn.toolCalls, [{ kind: "tool-call", callId: "call-1", name: "lookup", arguments: { query: "maps" } }]);
  assert.deepEqual(turn.toolResults, [
    { kind: "tool-result", callId: "call-1", output: { found: "maps" }, outputKind: "json", isError: false },
  ]);
  assert.deepEqual(turn.usage, [
    { kind: "usage", model: "tiny", inputTokens: 12, outputTokens: 3, reasoningTokens: null },
  ]);
  assert.deepEqual(turn.deltas, [{ kind: "text-delta", productId: "answer", channel: "answer", text: "found maps", last: true }]);
  assert.equal(turn.state, "awaiting-completion");
});

test("a tool result: a string goes as text, anything else as JSON; isError is carried", async () => {
  const turn = await new MockHost().start(
    {
      work(task) {
        task.toolResult("a", "plain words", { isError: true });
        task.toolResult("b", [1, "two"]);
        task.toolResult("c", 42);
        task.toolResult("d", null);
        task.toolResult("e", JSON.parse('"a JSON string"'));
        return Outcome.done();
      },
    },
    [],
  );
  assert.deepEqual(
    turn.toolResults.map((r) => [r.callId, r.output, r.outputKind, r.isError]),
    [
      ["a", "plain words", "text", true],
      ["b", [1, "two"], "json", false],
      ["c", 42, "json", false],
      ["d", null, "json", false],
      // A string is always text: JSON.parse gives a string back, so it goes as text too.
      ["e", "a JSON string", "text", false],
    ],
  );
});

test("a value with no JSON form, arguments that are not an object, and bad token counts are TypeErrors", async () => {
  const cases = {
    args: (task) => task.toolCall("c", "n", ["not", "an", "object"]),
    output: (task) => task.toolResult("c", undefined),
    cycle: (task) => {
      const o = {};
      o.o = o;
      task.toolCall("c", "n", o);
    },
    tokens: (task) => task.usage({ inputTokens: -1 }),
    channel: (task) => task.streamText({ productId: "p", channel: "shout", text: "x" }),
    detail: () => Outcome.fail({ code: "X", message: "m", detail: "text" }),
  };
  for (const [name, fn] of Object.entries(cases)) {
    const turn = await new MockHost().start({ work: (task) => (fn(task), Outcome.done()) }, []);
    assert.match(turn.error ?? "", /^work threw TypeError: /, name);
    assert.equal(turn.state, "failed", name);
  }
});

test("the mock host checks deltas as the host does", async () => {
  const refusals = {
    // Empty text only with last.
    empty: [(task) => task.say(""), "invalid-data"],
    long: [(task) => task.say("x", { productId: "p".repeat(257) }), "invalid-data"],
    control: [(task) => task.say("x", { productId: "a\nb" }), "invalid-data"],
    big: [(task) => task.say("x".repeat(64 * 1024 + 1)), "invalid-data"],
    bigArgs: [(task) => task.toolCall("c", "n", { a: "x".repeat(64 * 1024) }), "invalid-data"],
    deepArgs: [(task) => task.toolCall("c", "n", JSON.parse(`${'{"a":'.repeat(65)}1${"}".repeat(65)}`)), "invalid-data"],
    noCallId: [(task) => task.toolCall("", "n", {}), "invalid-data"],
    bigOutput: [(task) => task.toolResult("c", "x".repeat(256 * 1024 + 1)), "invalid-data"],
  };
  for (const [name, [report, code]] of Object.entries(refusals)) {
    let caught;
    const turn = await new MockHost().start(
      {
        work(task) {
          try {
            report(task);
          } catch (e) {
            caught = e;
          }
          return Outcome.done();
        },
      },
      [],
    );
    assert.ok(caught instanceof ReportError, name);
    assert.equal(caught.code, code, name);
    assert.equal(turn.activity.length, 0, name);
  }
  // In decide the task is not accepted yet: no reports but the decision.
  let early;
  await new MockHost().start(
    {
      decide(task) {
        try {
          task.say("too soon");
        } catch (e) {
          early = e;
        }
        return Decision.accept();
      },
      work: () => Outcome.done(),
    },
    [],
  );
  assert.equal(early.code, "invalid-transition");
});

test("over the activity cap a report is refused with limit-reached; the SDK's closing delta is skipped", async () => {
  const host = new MockHost({ maxActivityEvents: 3 });
  let refused;
  const turn = await host.start(
    {
      work(task) {
        for (let i = 0; i < 4; i++) {
          try {
            task.say(`${i} `);
          } catch (e) {
            refused = e;
          }
        }
        return Outcome.done();
      },
    },
    [],
  );
  assert.equal(refused.code, "limit-reached");
  assert.equal(refused.endsTask, false);
  assert.equal(turn.answer, "0 1 2 ");
  assert.equal(turn.state, "awaiting-completion");
  assert.equal(turn.error, null);
  assert.ok(turn.logs.some((l) => l.level === "warn" && /left open/.test(l.message)));
});

test("the activity bytes cap counts tool arguments and outputs", async () => {
  const host = new MockHost({ maxActivityBytes: 40 });
  let refused;
  await host.start(
    {
      work(task) {
        task.toolCall("c", "n", { q: "x".repeat(20) });
        try {
          task.toolResult("c", "y".repeat(20));
        } catch (e) {
          refused = e;
        }
        return Outcome.done();
      },
    },
    [],
  );
  assert.equal(refused.code, "limit-reached");
  assert.equal(host.activity.length, 1);
});

test("streamed text counts against maxProductsBytes", async () => {
  const turn = await new MockHost({ maxProductsBytes: 4 }).start({ work: (task) => (task.say("12345"), Outcome.done()) }, []);
  assert.equal(turn.state, "failed");
  assert.equal(turn.error, null);
});

test("a form: awaiting-input with the request; the answer reaches work tagged with its id", async () => {
  const host = new MockHost();
  let turn = await host.start(concierge, [DataItem.text("form")]);
  assert.equal(turn.state, "awaiting-input");
  assert.deepEqual(turn.form, { requestId: "trip", title: "Trip", description: null, schema: TRIP });
  assert.equal(turn.message[0].asText(), "Trip");
  assert.equal(turn.message[1].asData().requestId, "trip");
  assert.deepEqual(turn.message[1].metadata, { "aiphost.kind": "input-request" });
  assert.equal(turn.message[2].asText(), "Where to?");

  // A wrong answer is refused with the failing fields; the task waits on.
  assert.throws(
    () => host.answer(concierge, { city: 7, days: 0 }),
    (e) =>
      e instanceof InvalidAnswer &&
      JSON.stringify(e.errors.map((x) => x.path)) === JSON.stringify(["/city", "/days"]),
  );
  assert.throws(() => host.answer(concierge, { city: "Oslo" }), (e) => e.errors[0].message === '"days" is a required property');
  assert.equal(host.state, "awaiting-input");

  turn = await host.answer(concierge, { city: "Oslo", days: 3 });
  assert.equal(turn.answer, "OSLO for 3 days");
  assert.equal(turn.state, "awaiting-completion");
});

test("an untagged data item answers the form (the host tags it); text passes through", async () => {
  const host = new MockHost();
  await host.start(concierge, [DataItem.text("form")]);
  let turn = await host.continue(concierge, [DataItem.data({ city: "Rome", days: 2 })]);
  assert.equal(turn.answer, "ROME for 2 days");

  await host.start(concierge, [DataItem.text("form")]);
  turn = await host.continue(concierge, [DataItem.text("never mind")]);
  assert.equal(turn.state, "awaiting-input");
  assert.equal(turn.message[0].asText(), "what now?");
});

test("the mock host refuses a form whose schema is not an object schema, or whose id is malformed", async () => {
  const forms = {
    array: { requestId: "r", title: "T", schema: { type: "array" } },
    deep: { requestId: "r", title: "T", schema: { type: "object", x: JSON.parse(`${"[".repeat(32)}${"]".repeat(32)}`) } },
    big: { requestId: "r", title: "T", schema: { type: "object", description: "x".repeat(64 * 1024) } },
    id: { requestId: "a b", title: "T", schema: { type: "object" } },
    title: { requestId: "r", title: "", schema: { type: "object" } },
  };
  for (const [name, form] of Object.entries(forms)) {
    const turn = await new MockHost().start({ work: () => Outcome.ask({ form }) }, []);
    assert.match(turn.error ?? "", /^the host refused a report: invalid data: /, name);
    assert.equal(turn.state, "failed", name);
  }
  assert.throws(() => new Form({ requestId: "r", title: "T", schema: '{"type": "object"}' }), TypeError);
});

test("formAnswer finds the answer to one request among the items", () => {
  const items = [
    DataItem.text("hi"),
    formAnswerItem("other", { a: 1 }),
    DataItem.data({ b: 2 }),
    formAnswerItem("trip", { city: "Oslo" }),
  ];
  assert.deepEqual(formAnswer(items, "trip"), { city: "Oslo" });
  assert.deepEqual(formAnswer(items, "other"), { a: 1 });
  assert.equal(formAnswer(items, "none"), null);
  assert.equal(formAnswer([], "trip"), null);
});

test("fail with a code: failed with the message and the failure", async () => {
  const turn = await new MockHost().start(concierge, [DataItem.text("fail no luck")]);
  assert.equal(turn.state, "failed");
  assert.equal(turn.error, null);
  assert.deepEqual(turn.failure, { code: "CONCIERGE_FAILED", message: "no luck", retryable: false, detail: { word: "no luck" } });
  assert.equal(turn.message[0].asText(), "no luck");
  assert.deepEqual(turn.message[1].metadata, { "aiphost.kind": "failure" });

  const bad = await new MockHost().start({ work: () => Outcome.fail({ code: "lower", message: "m" }) }, []);
  assert.match(bad.error, /^the host refused a report: invalid data: a failure code/);
});

test("a plain reply: no task, no statuses; afterwards every report is task-ended", async () => {
  const host = new MockHost();
  const turn = await host.start(concierge, [DataItem.text("reply hello there")]);
  assert.equal(turn.state, null);
  assert.equal(turn.error, null);
  assert.deepEqual(turn.statuses, []);
  assert.deepEqual(turn.reply.map((i) => i.asText()), ["hello there"]);
  assert.throws(() => host.continue(concierge, []), /plain reply/);

  const items = await new MockHost().start({ decide: () => Decision.reply([DataItem.data({ a: 1 })]), work: () => Outcome.done() }, []);
  assert.deepEqual(items.reply[0].asData(), { a: 1 });

  const empty = await new MockHost().start({ decide: () => Decision.reply([]), work: () => Outcome.done() }, []);
  assert.match(empty.error, /^decide threw TypeError: Decision.reply needs at least one item/);
  assert.equal(empty.state, "rejected");
});

test("closing open products also precedes awaiting-input, and the closing delta of a canceled task stops quietly", async () => {
  const turn = await new MockHost().start({ work: (task) => (task.say("one moment"), Outcome.ask("which?")) }, []);
  assert.deepEqual(
    turn.deltas.map((d) => [d.text, d.last]),
    [
      ["one moment", false],
      ["", true],
    ],
  );
  assert.equal(turn.state, "awaiting-input");

  // The Leader canceled meanwhile: the closing delta gets task-ended and the SDK returns quietly.
  const calls = [];
  const canceled = {
    setStatus: (state) => calls.push(state),
    emitProductChunk: () => {},
    currentState: () => "working",
    streamText: (delta) => {
      calls.push(`delta ${JSON.stringify(delta.text)}`);
      if (delta.last) throw { tag: "task-ended" };
    },
    log: () => {},
  };
  const inv = {
    event: { tag: "continue" },
    taskId: "t",
    sessionId: null,
    leaderId: null,
    state: "working",
    dataItems: [],
    maxProductsBytes: null,
    productsBytes: 0,
    commandParams: "{}",
  };
  const partner = { work: (task) => (task.say("a"), Outcome.done([new Product("p")])) };
  assert.equal(handle(partner, inv, canceled), undefined);
  assert.deepEqual(calls, ['delta "a"', 'delta ""']);

  // A partner's own delta that meets task-ended stops it quietly too.
  const ended = { ...canceled, streamText: () => { throw { tag: "task-ended" }; } };
  assert.equal(handle(partner, inv, ended), undefined);
});
