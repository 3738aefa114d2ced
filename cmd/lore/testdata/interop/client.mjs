// The official TypeScript MCP SDK's client on `lore mcp` over stdio, driven by cmd/lore's interop test.
//
// Usage: node client.mjs LORE_BIN STORE [LORE_MCP_FLAG...]
// Reads one command a line on stdin and answers each on stdout, one JSON object a line:
//   {"id":N,"op":"subscribe","uris":[...]}        -> {"id":N,"ok":true}
//   {"id":N,"op":"write","ids":[...],"par":P}     -> {"id":N,"ok":true} once every upsert is acknowledged
// and prints {"event":"updated","uri":...} for each notifications/resources/updated, {"ready":true} once connected.
// Any failure is {"id":N,"error":"..."}; stdin's end closes the client.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import readline from "node:readline";

const [bin, store, ...flags] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const transport = new StdioClientTransport({
  command: bin,
  args: ["mcp", "--store", store, "--idle", "5s", ...flags],
  env: { ...process.env },
  stderr: "inherit",
});
const client = new Client({ name: "lore-interop-ts", version: "1.0.0" });
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => out({ event: "updated", uri: n.params.uri }));
await client.connect(transport);
out({ ready: true, protocolVersion: transport.protocolVersion ?? null });

async function upsert(id) {
  const res = await client.callTool({
    name: "upsert_nodes",
    arguments: { nodes: [{ id, type: "Topic", properties: { name: id } }] },
  });
  if (res.isError) throw new Error(`upsert ${id}: ${res.content.map((c) => c.text).join("")}`);
}

async function run(cmd) {
  switch (cmd.op) {
    case "subscribe":
      for (const uri of cmd.uris) await client.subscribeResource({ uri });
      return;
    case "write": {
      const queue = [...cmd.ids];
      const worker = async () => {
        while (queue.length) await upsert(queue.shift());
      };
      await Promise.all(Array.from({ length: Math.max(1, cmd.par || 1) }, worker));
      return;
    }
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
}

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  run(cmd).then(
    () => out({ id: cmd.id, ok: true }),
    (err) => out({ id: cmd.id, error: String(err?.message ?? err) }),
  );
}
await client.close();
