// Drives fsd serve's /agui with @ag-ui/client's HttpAgent: one run that
// ends at an approval's interrupt, then a run that resumes it with an
// approve. Prints {"first": [...], "second": [...], "interrupts": [...],
// "result": ..., "messages": [...]} on stdout.
import { HttpAgent } from "@ag-ui/client";

const agent = new HttpAgent({ url: process.env.FSD_AGUI_URL, threadId: "agui-e2e" });
agent.addMessage({ id: "u1", role: "user", content: "go" });

async function run(params) {
  const seen = [];
  let outcome;
  const res = await agent.runAgent(params, {
    onEvent: ({ event }) => { seen.push(event.type); },
    onRunFinishedEvent: ({ event }) => { outcome = event.outcome; },
    onRunErrorEvent: ({ event }) => { seen.push("error: " + event.message); },
  });
  return { seen, outcome, result: res.result };
}

const first = await run();
const interrupts = first.outcome?.type === "interrupt" ? first.outcome.interrupts : [];
const second = await run({
  resume: interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: { decision: "approve" } })),
});
console.log(JSON.stringify({
  first: first.seen,
  second: second.seen,
  interrupts,
  outcome: second.outcome,
  result: second.result,
  messages: agent.messages.map((m) => ({ role: m.role, content: m.content, toolCalls: m.toolCalls?.map((c) => c.function.name) })),
}));
