// The official TypeScript SDK client calling humangate with 2025-11-25 tasks.
// Usage: node tasks_client.mjs <mcp url> <stream|create|get|result|cancel> <json arguments | task id>
// Prints one JSON object per line; HG_KEY, when set, is sent as the bearer API key.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, mode, arg] = process.argv.slice(2);
const headers = process.env.HG_KEY ? { Authorization: `Bearer ${process.env.HG_KEY}` } : {};
const print = (value) => process.stdout.write(JSON.stringify(value) + "\n");

const client = new Client({ name: "humangate-tests", version: "1.0.0" }, { capabilities: {} });
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
const tasks = client.experimental.tasks;
try {
  if (mode === "stream") {
    // Creates the task, polls tasks/get, then reads tasks/result: the SDK's whole task flow.
    const stream = tasks.callToolStream({ name: "elicit", arguments: JSON.parse(arg) }, CallToolResultSchema, {
      task: { ttl: 600000 },
    });
    for await (const message of stream) print(message);
  } else if (mode === "create") {
    const created = await client.request(
      { method: "tools/call", params: { name: "elicit", arguments: JSON.parse(arg), task: { ttl: 600000 } } },
      CreateTaskResultSchema,
    );
    print({ type: "created", ...created });
  } else if (mode === "get") {
    print({ type: "task", ...(await tasks.getTask(arg)) });
  } else if (mode === "result") {
    print({ type: "result", result: await tasks.getTaskResult(arg, CallToolResultSchema) });
  } else if (mode === "cancel") {
    print({ type: "cancelled", ...(await tasks.cancelTask(arg)) });
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
} catch (error) {
  print({ type: "error", message: String(error?.message ?? error), code: error?.code ?? null });
} finally {
  await client.close();
}
