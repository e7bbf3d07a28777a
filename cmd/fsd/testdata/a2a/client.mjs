// Drives fsd serve's A2A agent with @a2a-js/sdk's client (its v0.3
// JSON-RPC transport, chosen from the card's protocolVersion): fetches
// the card, streams a message to the approval's input-required, approves
// it with a message on the task, then starts a task in another context
// and cancels it at its approval. Prints what it saw as JSON on stdout.
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";

const legacyCompat = { enabled: true };
const factory = new ClientFactory({
  transports: [new JsonRpcTransportFactory({ legacyCompat })],
  cardResolver: new DefaultAgentCardResolver({ legacyCompat }),
});
const client = await factory.createFromUrl(process.env.FSD_A2A_URL);
const card = await client.getAgentCard();
const text = (t) => ({ content: { $case: "text", value: t } });
const message = (parts, extra = {}) => ({ messageId: crypto.randomUUID(), role: 1, parts, ...extra });

const stream = [];
let task;
for await (const ev of client.sendMessageStream({ message: message([text("go")], { contextId: "a2a-e2e" }) })) {
  const p = ev.payload ?? ev;
  stream.push({ case: p.$case, state: p.value?.status?.state });
  if (p.$case === "task") task = p.value;
}
const approved = await client.sendMessage({ message: message([{ content: { $case: "data", value: { decision: "approve" } } }], { contextId: task.contextId, taskId: task.id }) });
const done = approved.payload?.value ?? approved;
const got = await client.getTask({ id: task.id });

const other = await client.sendMessage({ message: message([text("go")], { contextId: "a2a-e2e-2" }) });
const waiting = other.payload?.value ?? other;
const cancelled = await client.cancelTask({ id: waiting.id });

console.log(JSON.stringify({
  card: { name: card.name, skills: card.skills.map((s) => s.id), streaming: card.capabilities.streaming, version: card.supportedInterfaces?.[0]?.protocolVersion },
  stream,
  done: { state: done.status?.state, answer: done.artifacts?.[0]?.parts?.[0]?.content?.value },
  got: { state: got.status?.state },
  waiting: { state: waiting.status?.state },
  cancelled: { state: cancelled.status?.state },
}, (k, v) => (typeof v === "bigint" ? String(v) : v)));
