import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { jsonSchema, type ToolSet, tool } from "ai";
import { guardedFetch } from "../platform/guarded-fetch";
import type { ToolProvider, TurnScope } from "../platform/turn-tools";
import { type ServerTarget, serverTargets } from "./custom";

/** How long a server's tool list is reused before it is asked again. */
const LIST_TTL_MS = 60_000;
/** The time one server gets to connect and list its tools before it drops out of the turn. */
const CONNECT_MS = 8_000;
/** A tool call's own cap (the runtime also stops every tool at 30 s). */
const CALL_MS = 25_000;

type ListedTool = { name: string; description?: string; inputSchema: Record<string, unknown> };

/** Per isolate: tool lists by server (and the credentials it was listed with). */
const lists = new Map<string, { at: number; tools: ListedTool[] }>();
const listKey = (workspaceId: string, t: ServerTarget) =>
  `${workspaceId}\n${t.slug}\n${t.url}\n${Object.keys(t.headers).sort().join(",")}`;

/** The model sees `mcp__<server>__<tool>`; names keep to what every provider accepts. */
export const mcpToolName = (server: string, name: string) =>
  `mcp__${server}__${name}`.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64);

const NULL_BODY = new Set([101, 204, 205, 304]);

/** The SDK's transport reaches the server only through the guarded fetch (no private hosts, caps). */
function transportFetch(scope: TurnScope, headers: Record<string, string>) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = input instanceof Request ? input.url : String(input);
    const sent = Object.fromEntries(new Headers(init?.headers).entries());
    const res = await guardedFetch(scope.env, url, {
      method: init?.method ?? "GET",
      headers: { ...sent, ...headers },
      body: typeof init?.body === "string" ? init.body : undefined,
      signal: init?.signal ?? scope.signal,
      timeoutMs: CALL_MS,
      origin: scope.origin,
    });
    return new Response(NULL_BODY.has(res.status) ? null : res.body, { status: res.status, headers: res.headers });
  };
}

async function connect(scope: TurnScope, target: ServerTarget): Promise<Client> {
  const client = new Client({ name: "workspace-agent-service", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(target.url), {
    fetch: transportFetch(scope, target.headers),
  });
  await client.connect(transport, { timeout: CONNECT_MS, signal: scope.signal });
  return client;
}

async function serverTools(scope: TurnScope, target: ServerTarget) {
  const client = await connect(scope, target);
  const key = listKey(scope.workspaceId, target);
  const cached = lists.get(key);
  if (cached && Date.now() - cached.at < LIST_TTL_MS) return { client, tools: cached.tools };
  const { tools } = await client.listTools(undefined, { timeout: CONNECT_MS, signal: scope.signal });
  const listed = tools.map((t) => ({
    name: t.name,
    description: t.description,
    inputSchema: t.inputSchema as Record<string, unknown>,
  }));
  lists.set(key, { at: Date.now(), tools: listed });
  return { client, tools: listed };
}

/** What a tool call answers the model: the text parts, or the error the server reported. */
function resultText(result: Awaited<ReturnType<Client["callTool"]>>): string {
  const parts = (result.content as { type: string; text?: string }[] | undefined) ?? [];
  const text = parts.map((p) => (p.type === "text" ? (p.text ?? "") : `[${p.type}]`)).join("\n");
  if (result.isError) throw new Error(text || "the MCP tool reported an error");
  return text;
}

/**
 * The MCP area's tools for a turn: every tool of each MCP server the agent may use (platform
 * servers the workspace installed and its `t:` integrations). A server that fails or does not
 * answer in time drops out of this turn with a note to the agent; the turn goes on.
 */
export const mcpTools: ToolProvider = async (scope) => {
  const targets = await serverTargets(scope.env, scope.workspaceId, scope.agent.mcpServers);
  if (!targets.length) return { tools: {} };
  const offers = await Promise.all(
    targets.map((t) =>
      serverTools(scope, t).then(
        (listed) => ({ target: t, ...listed }),
        (error: unknown) => {
          console.error(
            JSON.stringify({ level: "warn", msg: "MCP server unavailable", server: t.slug, error: String(error) }),
          );
          return { target: t, client: null, tools: [] as ListedTool[] };
        },
      ),
    ),
  );
  const tools: ToolSet = {};
  const down: string[] = [];
  for (const { target, client, tools: listed } of offers) {
    if (!client) {
      down.push(`${target.name} (${target.slug})`);
      continue;
    }
    for (const t of listed) {
      tools[mcpToolName(target.slug, t.name)] = tool({
        description: `${t.description ?? t.name} (MCP server ${target.name})`,
        inputSchema: jsonSchema(t.inputSchema as Parameters<typeof jsonSchema>[0]),
        execute: async (args, { abortSignal }) =>
          resultText(
            await client.callTool({ name: t.name, arguments: args as Record<string, unknown> }, undefined, {
              timeout: CALL_MS,
              signal: abortSignal,
            }),
          ),
      });
    }
  }
  const instructions = down.length
    ? [`These MCP servers are unavailable in this turn; their tools are not offered: ${down.join(", ")}.`]
    : [];
  return { tools, instructions };
};
