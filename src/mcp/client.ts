// Imported statically on purpose: loaded with `import()`, esbuild initializes the zod/v4-mini
// modules the SDK shares with the AI SDK lazily, and the bundled Worker fails to start
// ("ZodMiniLiteral is not a constructor"; `npm run check:startup` catches it).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { jsonSchema, type ToolSet, tool } from "ai";
import { hashToken } from "../platform/crypto";
import { guardedFetch } from "../platform/guarded-fetch";
import type { ToolProvider, TurnScope } from "../platform/turn-tools";
import { type ServerTarget, serverTargets } from "./custom";

/** How long a server's tool list is reused before it is asked again. */
const LIST_TTL_MS = 60_000;
/** The time one server gets to connect and list its tools before it drops out of the turn. */
const CONNECT_MS = 8_000;
/** A tool call's own cap (the runtime also stops every tool at 30 s). */
const CALL_MS = 25_000;
/**
 * What one turn takes from MCP servers, whatever they list: a server with thousands of tools,
 * or a tool answering megabytes, would otherwise fill the model's context (and the bill).
 */
export const MCP_LIMITS = {
  serversPerTurn: 16,
  toolsPerServer: 64,
  descriptionChars: 1_000,
  resultChars: 32_000,
} as const;

type ListedTool = { name: string; description?: string; inputSchema: Record<string, unknown> };

/** Per isolate: tool lists by server (and the credentials it was listed with), the newest 500. */
const lists = new Map<string, { at: number; tools: ListedTool[] }>();
const LISTS_KEPT = 500;
const listKey = (workspaceId: string, t: ServerTarget) =>
  `${workspaceId}\n${t.slug}\n${t.url}\n${Object.keys(t.headers).sort().join(",")}`;

/**
 * The model sees `mcp__<server>__<tool>`; names keep to what every provider accepts (64
 * characters of [A-Za-z0-9_-]). A longer name keeps its start and ends with a hash of the whole,
 * so two long names never collapse into one.
 */
export function mcpToolName(server: string, name: string): string {
  const full = `mcp__${server}__${name}`.replace(/[^a-zA-Z0-9_-]/g, "_");
  if (full.length <= 64) return full;
  return `${full.slice(0, 55)}_${hashToken(`${server}\n${name}`).slice(0, 8)}`;
}

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
  lists.delete(key); // re-inserted last: the Map's order is the age order
  lists.set(key, { at: Date.now(), tools: listed });
  if (lists.size > LISTS_KEPT) lists.delete(lists.keys().next().value!);
  return { client, tools: listed };
}

/** What a tool call answers the model: the text parts (cut at the limit), or the error the server reported. */
export function resultText(result: Awaited<ReturnType<Client["callTool"]>>): string {
  const parts = (result.content as { type: string; text?: string }[] | undefined) ?? [];
  const text = clip(parts.map((p) => (p.type === "text" ? (p.text ?? "") : `[${p.type}]`)).join("\n"));
  if (result.isError) throw new Error(text || "the MCP tool reported an error");
  return text;
}

const clip = (text: string, max: number = MCP_LIMITS.resultChars) =>
  text.length <= max
    ? text
    : `${text.slice(0, max)}\n[cut: the result had ${text.length} characters, ${max} are shown]`;

/**
 * The MCP area's tools for a turn: every tool of each MCP server the agent may use (platform
 * servers the workspace installed and its `t:` integrations). A server that fails or does not
 * answer in time drops out of this turn with a note to the agent; the turn goes on.
 */
export const mcpTools: ToolProvider = async (scope) => {
  const enabled = await serverTargets(scope.env, scope.workspaceId, scope.agent.mcpServers);
  if (!enabled.length) return { tools: {} };
  const targets = enabled.slice(0, MCP_LIMITS.serversPerTurn);
  const left = enabled.slice(MCP_LIMITS.serversPerTurn);
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
  const cut: string[] = [];
  for (const { target, client, tools: listed } of offers) {
    if (!client) {
      down.push(`${target.name} (${target.slug})`);
      continue;
    }
    if (listed.length > MCP_LIMITS.toolsPerServer) cut.push(`${target.name} (${target.slug})`);
    for (const t of listed.slice(0, MCP_LIMITS.toolsPerServer)) {
      tools[mcpToolName(target.slug, t.name)] = tool({
        description: clip(`${t.description ?? t.name} (MCP server ${target.name})`, MCP_LIMITS.descriptionChars),
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
  const instructions: string[] = [];
  if (down.length)
    instructions.push(
      `These MCP servers are unavailable in this turn; their tools are not offered: ${down.join(", ")}.`,
    );
  if (cut.length)
    instructions.push(
      `These MCP servers list more than ${MCP_LIMITS.toolsPerServer} tools; only their first ${MCP_LIMITS.toolsPerServer} are offered: ${cut.join(", ")}.`,
    );
  if (left.length)
    instructions.push(
      `An agent uses at most ${MCP_LIMITS.serversPerTurn} MCP servers in a turn; these are not offered: ${left.map((t) => `${t.name} (${t.slug})`).join(", ")}.`,
    );
  return { tools, instructions };
};
