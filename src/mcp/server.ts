import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Context } from "hono";
import { z } from "zod";
import { listAgents } from "../agents/service";
import { listArtifacts } from "../artifacts/service";
import type { Scope } from "../auth/scopes";
import { createConversation } from "../conversations/service";
import { postMessage } from "../conversations/turns";
import { auditEntry, callerActor } from "../http/audit";
import type { AppEnv } from "../http/context";
import { baseUrl } from "../platform/env";
import { ApiError } from "../platform/problem";

/** The service's own MCP tools and the scope each needs. */
export const MCP_TOOL_SCOPES: Record<string, Scope> = {
  list_agents: "agents:read",
  ask_agent: "conversations:write",
  list_artifacts: "conversations:read",
};

const text = (value: unknown) => ({
  content: [{ type: "text" as const, text: typeof value === "string" ? value : JSON.stringify(value, null, 2) }],
});
const failure = (message: string) => ({ content: [{ type: "text" as const, text: message }], isError: true });

/** An MCP server for one request, acting as the request's caller (stateless: nothing is kept). */
function serverFor(c: Context<AppEnv>): McpServer {
  const caller = c.var.caller;
  const workspaceId = caller.workspace.id;
  const server = new McpServer({ name: "workspace-agent-service", version: "1.0.0" });
  server.registerTool(
    "list_agents",
    {
      description: "Lists the workspace's agents: slug, display name, description, whether enabled and default.",
      inputSchema: {},
    },
    async () => {
      const agents = await listAgents(c.env, workspaceId);
      return text(
        agents.map((a) => ({
          slug: a.slug,
          display_name: a.display_name,
          description: a.description ?? null,
          enabled: a.status === "enabled",
          is_default: a.is_default,
        })),
      );
    },
  );
  server.registerTool(
    "ask_agent",
    {
      description:
        "Asks one of the workspace's agents (its slug or alias, else the default agent) and answers with its reply. " +
        "Runs on the fast lane in a new conversation and uses the workspace's credits.",
      inputSchema: {
        prompt: z.string().min(1).max(20_000).describe("What to ask"),
        agent_slug: z.string().max(64).optional().describe("The agent's slug or alias; default: the default agent"),
      },
    },
    async ({ prompt, agent_slug }) => {
      try {
        const conversation = await createConversation(
          c.env,
          workspaceId,
          caller.userId,
          { agent_slug, mode: "fast", title: "MCP ask" },
          (created) =>
            auditEntry(c, {
              kind: "conversation.create",
              target: `conversation:${created.id}`,
              agentId: created.agent_id,
              conversationId: created.id,
              details: { mode: created.mode, agent_slug: created.agent_slug },
            }),
        );
        const turn = await postMessage(
          {
            env: c.env,
            providers: c.var.areas.tools,
            workspace: { id: workspaceId, name: caller.workspace.name },
            userId: caller.userId,
            actor: callerActor(caller),
            origin: baseUrl(c.env, c.req.url),
            waitUntil: (p) => c.executionCtx.waitUntil(p),
          },
          conversation.id,
          { content: prompt },
        );
        const reply = await turn.reply;
        return text(reply.content);
      } catch (e) {
        if (e instanceof ApiError) return failure(`${e.code}: ${e.message}`);
        throw e;
      }
    },
  );
  server.registerTool(
    "list_artifacts",
    { description: "Lists the files (artifacts) of the caller's conversations, newest first.", inputSchema: {} },
    async () => {
      const artifacts = await listArtifacts(c.env, workspaceId, caller.userId);
      return text(
        artifacts.map((a) => ({
          id: a.id,
          name: a.name,
          content_type: a.contentType,
          size: a.size,
          conversation_id: a.conversationId,
          created_at: a.createdAt,
        })),
      );
    },
  );
  return server;
}

/** The scope a JSON-RPC message needs beyond a valid token (only `tools/call` of a known tool). */
export function scopeNeeded(message: unknown): Scope | null {
  if (!message || typeof message !== "object") return null;
  const m = message as { method?: unknown; params?: { name?: unknown } };
  if (m.method !== "tools/call" || typeof m.params?.name !== "string") return null;
  return MCP_TOOL_SCOPES[m.params.name] ?? null;
}

/** Hands one Streamable HTTP request to a fresh server and transport (stateless, JSON responses). */
export async function handleMcp(c: Context<AppEnv>, request: Request): Promise<Response> {
  const server = serverFor(c);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  return transport.handleRequest(request);
}
