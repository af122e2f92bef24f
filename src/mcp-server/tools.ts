import { type CallToolResult, McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
import { listAgents } from "../agents/service";
import { toArtifact } from "../artifacts/schemas";
import { listArtifacts } from "../artifacts/service";
import { ApiError } from "../platform/problem";
import { askAgent, type Progress } from "./ask";
import type { ToolContext } from "./context";
import { TOOL_SCOPES, type ToolName } from "./scopes";

export const SERVER_INFO = { name: "workspace-agent-service", title: "Workspace Agent Service", version: "1.0.0" };
const INSTRUCTIONS =
  "The agents of one workspace. list_agents shows them, ask_agent asks one a question (a fast turn, paid from the " +
  "workspace's credits) and answers its reply, list_artifacts lists the files agents delivered to you.";
/**
 * How long a 2026-07-28 client may reuse `tools/list` and `server/discover`: the tools change
 * only with a deployment. Private: the answers go to one token's holder.
 */
const CACHE = { ttlMs: 300_000, cacheScope: "private" } as const;

/** A tool's answer: the JSON as text (for every client) and as structured content. */
const json = (value: Record<string, unknown>): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(value) }],
  structuredContent: value,
});

/** A refusal of the service (no credits, unknown agent, no model) is a tool error the model can read, never a protocol error. */
function toolError(e: unknown): CallToolResult {
  if (!(e instanceof ApiError)) throw e;
  return { isError: true, content: [{ type: "text", text: `${e.code}: ${e.message}` }] };
}

const scopeNote = (tool: ToolName) => ` Needs the scope ${TOOL_SCOPES[tool]}.`;

/**
 * A fresh server for one request (every era is served statelessly), with the three tools of
 * this service, registered in a fixed order so `tools/list` always answers the same list.
 */
export function mcpServerFor(ctx: ToolContext): McpServer {
  const server = new McpServer(SERVER_INFO, {
    // The tools are the same for every request of a deployment: no list change to announce.
    capabilities: { tools: { listChanged: false } },
    instructions: INSTRUCTIONS,
    cacheHints: { "tools/list": CACHE, "server/discover": CACHE },
  });
  listAgentsTool(server, ctx);
  askAgentTool(server, ctx);
  listArtifactsTool(server, ctx);
  return server;
}

/** `list_agents`: the workspace's agents. */
function listAgentsTool(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    "list_agents",
    {
      title: "List agents",
      description: `The workspace's agents: slug, name, description, status and which one is the default.${scopeNote("list_agents")}`,
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async () => {
      const agents = await listAgents(ctx.env, ctx.caller.workspace.id);
      return json({
        agents: agents.map((a) => ({
          slug: a.slug,
          display_name: a.display_name,
          description: a.description ?? null,
          aliases: a.aliases,
          status: a.status,
          is_default: a.is_default,
          runtime_profile: a.runtime_profile,
        })),
      });
    },
  );
}

/** `ask_agent`: one question to an agent, in a new fast conversation of the caller's. */
function askAgentTool(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    "ask_agent",
    {
      title: "Ask an agent",
      description: `Asks an agent of the workspace one question and answers its reply. Runs a fast turn in a new conversation of yours (so it shows in your conversations) and is paid from the workspace's credits. Without agent_slug the default agent answers. With a progress token, progress notifications name the conversation first, then what the agent does; the turn finishes and its reply is kept in that conversation even if this call is cut off.${scopeNote("ask_agent")}`,
      inputSchema: z.object({
        prompt: z.string().trim().min(1).max(32_000).describe("The question or task, at most 32 000 characters"),
        agent_slug: z
          .string()
          .min(1)
          .max(64)
          .optional()
          .describe("The slug or an alias of the agent to ask (see list_agents); the default agent when left out"),
      }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async ({ prompt, agent_slug }, { mcpReq }) => {
      const token = mcpReq._meta?.progressToken;
      const progress: Progress | null =
        token === undefined
          ? null
          : (step, message) =>
              mcpReq.notify({
                method: "notifications/progress",
                params: { progressToken: token, progress: step, message },
              });
      try {
        const { conversation, reply } = await askAgent(ctx, { prompt, agent_slug }, progress, mcpReq.signal);
        return {
          content: [{ type: "text", text: reply.content }],
          structuredContent: {
            reply: reply.content,
            agent_slug: conversation.agent_slug,
            conversation_id: conversation.id,
            message_id: reply.id,
            credits: reply.usage.credits,
          },
        };
      } catch (e) {
        return toolError(e);
      }
    },
  );
}

/** `list_artifacts`: the files of the caller's conversations. */
function listArtifactsTool(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    "list_artifacts",
    {
      title: "List artifacts",
      description: `The files agents delivered in your conversations (and files of deleted conversations you produced), newest first, at most 500, each with its download_url (a URL of the REST API: it takes a token for the API, not this MCP server's).${scopeNote("list_artifacts")}`,
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async () => {
      const rows = await listArtifacts(ctx.env, ctx.caller.workspace.id, ctx.caller.userId);
      return json({ artifacts: rows.map((r) => toArtifact(ctx.origin, r)) });
    },
  );
}
