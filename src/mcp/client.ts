import type { CallToolResult, Client, PriorDiscovery, Tool } from "@modelcontextprotocol/client";
import { jsonSchema, type ToolSet, tool } from "ai";
import { hashToken } from "../platform/crypto";
import { guardedFetch } from "../platform/guarded-fetch";
import type { ToolProvider, TurnScope } from "../platform/turn-tools";
import { type ServerTarget, serverTargets } from "./custom";

/**
 * How long a server's tool list, and the protocol era it speaks, are reused before it is asked
 * again (at most: a 2026-07-28 server's `ttlMs` may say less).
 */
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

/** Per isolate, by server (and the credentials it is called with): its tools and era, the newest 500. */
const servers = new Map<string, { at: number; ttlMs: number; tools: Tool[]; era: PriorDiscovery }>();
const SERVERS_KEPT = 500;
const serverKey = (workspaceId: string, t: ServerTarget) =>
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

const CLIENT_INFO = { name: "workspace-agent-service", version: "1.0.0" };

/**
 * A client of MCP 2026-07-28 servers and of 2025-era ones alike: `server/discover` tells which
 * (unless the era is known from a fresh list), and a 2025 server gets the `initialize` handshake.
 */
async function connect(scope: TurnScope, target: ServerTarget, prior?: PriorDiscovery): Promise<Client> {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const client = new Client(CLIENT_INFO, {
    versionNegotiation: { mode: "auto" },
    // A server's question in the middle of a call (elicitation, sampling) has no one to answer it.
    inputRequired: { autoFulfill: false },
  });
  const transport = new StreamableHTTPClientTransport(new URL(target.url), {
    fetch: transportFetch(scope, target.headers),
  });
  await client.connect(transport, { timeout: CONNECT_MS, signal: scope.signal, prior });
  return client;
}

async function serverTools(scope: TurnScope, target: ServerTarget): Promise<{ client: Client; tools: Tool[] }> {
  const key = serverKey(scope.workspaceId, target);
  const cached = servers.get(key);
  const fresh = cached && Date.now() - cached.at < cached.ttlMs ? cached : undefined;
  try {
    const client = await connect(scope, target, fresh?.era);
    if (fresh) return { client, tools: fresh.tools };
    const listed = await client.listTools(undefined, { timeout: CONNECT_MS, signal: scope.signal });
    const discover = client.getDiscoverResult();
    servers.delete(key); // re-inserted last: the Map's order is the age order
    servers.set(key, {
      at: Date.now(),
      ttlMs: listTtl(listed),
      tools: listed.tools,
      era: client.getProtocolEra() === "modern" && discover ? { kind: "modern", discover } : { kind: "legacy" },
    });
    if (servers.size > SERVERS_KEPT) servers.delete(servers.keys().next().value!);
    return { client, tools: listed.tools };
  } catch (e) {
    servers.delete(key); // a stale list or era: the next turn asks the server afresh
    throw e;
  }
}

/** Our reuse time, or less when the server's caching hint says so (2025 servers give none). */
function listTtl(listed: object): number {
  const { ttlMs } = listed as { ttlMs?: unknown };
  return typeof ttlMs === "number" && Number.isFinite(ttlMs) ? Math.min(LIST_TTL_MS, Math.max(0, ttlMs)) : LIST_TTL_MS;
}

/**
 * A call that the server answered with `input_required` (2026-07-28: it wants an elicitation,
 * a sample or roots before it goes on) fails with a message the agent can act on.
 */
function explained(e: unknown): never {
  const { code, data } = (e ?? {}) as { code?: unknown; data?: { resultType?: unknown } };
  if (code === "UNSUPPORTED_RESULT_TYPE" && data?.resultType === "input_required")
    throw new Error(
      "The MCP server asked for more input during the call (an elicitation, sampling or roots request); no one can answer it during an agent's turn, so the call failed",
    );
  throw e;
}

/** What a tool call answers the model: the text parts (cut at the limit), or the error the server reported. */
export function resultText(result: CallToolResult): string {
  const parts = (result.content as { type: string; text?: string }[] | undefined) ?? [];
  const text = clip(parts.map((p) => (p.type === "text" ? (p.text ?? "") : `[${p.type}]`)).join("\n"));
  if (result.isError) throw new Error(text || "the MCP tool reported an error");
  return text;
}

const clip = (text: string, max: number = MCP_LIMITS.resultChars) =>
  text.length <= max
    ? text
    : `${text.slice(0, max)}\n[cut: the result had ${text.length} characters, ${max} are shown]`;

const named = (t: ServerTarget) => `${t.name} (${t.slug})`;

/** A server's tools for this turn; one that fails or does not answer in time offers none (no client). */
function offerOf(scope: TurnScope, t: ServerTarget) {
  return serverTools(scope, t).then(
    (listed) => ({ target: t, ...listed }),
    (error: unknown) => {
      console.error(
        JSON.stringify({ level: "warn", msg: "MCP server unavailable", server: t.slug, error: String(error) }),
      );
      return { target: t, client: null, tools: [] as Tool[] };
    },
  );
}

/** One of a server's tools as the model sees it, called through the server's client. */
function mcpTool(target: ServerTarget, client: Client, t: Tool) {
  return tool({
    description: clip(`${t.description ?? t.name} (MCP server ${target.name})`, MCP_LIMITS.descriptionChars),
    inputSchema: jsonSchema(t.inputSchema as Parameters<typeof jsonSchema>[0]),
    // A tool its server calls destructive waits for a person's approval.
    needsApproval: t.annotations?.destructiveHint === true,
    execute: async (args, { abortSignal }) =>
      resultText(
        await client
          // The definition lets the SDK mirror `x-mcp-header` arguments into `Mcp-Param-*` headers.
          .callTool(
            { name: t.name, arguments: args as Record<string, unknown> },
            { timeout: CALL_MS, signal: abortSignal, toolDefinition: t },
          )
          .catch(explained),
      ),
  });
}

/** What the agent is told about servers left out of this turn: down, listing too many tools, over the limit. */
function turnNotes(down: string[], cut: string[], left: ServerTarget[]): string[] {
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
      `An agent uses at most ${MCP_LIMITS.serversPerTurn} MCP servers in a turn; these are not offered: ${left.map(named).join(", ")}.`,
    );
  return instructions;
}

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
  const offers = await Promise.all(targets.map((t) => offerOf(scope, t)));
  const tools: ToolSet = {};
  const down: string[] = [];
  const cut: string[] = [];
  for (const { target, client, tools: listed } of offers) {
    if (!client) {
      down.push(named(target));
      continue;
    }
    if (listed.length > MCP_LIMITS.toolsPerServer) cut.push(named(target));
    for (const t of listed.slice(0, MCP_LIMITS.toolsPerServer))
      tools[mcpToolName(target.slug, t.name)] = mcpTool(target, client, t);
  }
  return { tools, instructions: turnNotes(down, cut, left) };
};
