// The official TypeScript SDK's client against fsd mcp serve: it lists
// the tool, answers the approval question fsd puts to it (elicitation) with
// approve, calls the tool (the SDK checks structuredContent against the
// tool's outputSchema) and prints what it saw as one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [command, ...args] = JSON.parse(process.env.FSD_SERVE_ARGV);
const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
const client = new Client({ name: "fsd-ts-test", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push({ message: req.params.message, schema: req.params.requestedSchema });
  return { action: "accept", content: { decision: "approve" } };
});
await client.connect(transport);
const { tools } = await client.listTools();
const result = await client.callTool({ name: tools[0].name, arguments: {} });
console.log(JSON.stringify({ tool: tools[0], result, asked }));
await client.close();
