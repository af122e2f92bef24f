import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { listAgents } from "../agents/service";
import { toArtifact } from "../artifacts/schemas";
import { listArtifacts } from "../artifacts/service";
import type { AuditEventInput, AuditEventOf } from "../audit/events";
import type { Caller } from "../auth/caller";
import type { Scope } from "../auth/scopes";
import { createConversation } from "../conversations/service";
import { postMessage, quickAskReady, type TurnContext } from "../conversations/turns";
import { ApiError } from "../platform/problem";

/** The scope each tool needs; `tools/call` without it is refused with 403 before the tool runs. */
export const TOOL_SCOPES = {
  list_agents: "agents:read",
  ask_agent: "conversations:write",
  list_artifacts: "conversations:read",
} as const satisfies Record<string, Scope>;
export type ToolName = keyof typeof TOOL_SCOPES;
export const isToolName = (name: unknown): name is ToolName =>
  typeof name === "string" && Object.hasOwn(TOOL_SCOPES, name);

/** Everything the tools of one request need: the caller, the turn context, and the route's events. */
export type ToolContext = {
  env: Env;
  caller: Caller;
  origin: string;
  turn: TurnContext;
  /** The route's event, written in the same batch as the change it describes. */
  event: (input: AuditEventOf) => AuditEventInput;
};

const SERVER_INFO = { name: "workspace-agent-service", title: "Workspace Agent Service", version: "1.0.0" };
const INSTRUCTIONS =
  "The agents of one workspace. list_agents shows them, ask_agent asks one a question (a fast turn, paid from the " +
  "workspace's credits) and answers its reply, list_artifacts lists the files agents delivered to you.";

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

/** A fresh server for one request (the transport is stateless), with the three tools of this service. */
export function mcpServerFor(ctx: ToolContext): McpServer {
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
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
      inputSchema: {},
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
      description: `Asks an agent of the workspace one question and answers its reply. Runs a fast turn in a new conversation of yours (so it shows in your conversations) and is paid from the workspace's credits. Without agent_slug the default agent answers.${scopeNote("ask_agent")}`,
      inputSchema: {
        prompt: z.string().trim().min(1).max(32_000).describe("The question or task, at most 32 000 characters"),
        agent_slug: z
          .string()
          .min(1)
          .max(64)
          .optional()
          .describe("The slug or an alias of the agent to ask (see list_agents); the default agent when left out"),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async ({ prompt, agent_slug }) => {
      try {
        await quickAskReady(ctx.env, ctx.caller.workspace.id);
        const conversation = await createConversation(
          ctx.env,
          ctx.caller.workspace.id,
          ctx.caller.userId,
          { mode: "fast", agent_slug },
          (created) =>
            ctx.event({
              kind: "conversation.create",
              target: `conversation:${created.id}`,
              agentId: created.agent_id,
              conversationId: created.id,
              details: { mode: created.mode, agent_slug: created.agent_slug },
            }),
        );
        const turn = await postMessage(ctx.turn, conversation.id, { content: prompt }, { stream: false });
        if (turn.kind !== "reply") throw new Error("a turn asked for without its stream answers with its reply");
        const { reply } = turn;
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
      inputSchema: {},
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async () => {
      const rows = await listArtifacts(ctx.env, ctx.caller.workspace.id, ctx.caller.userId);
      return json({ artifacts: rows.map((r) => toArtifact(ctx.origin, r)) });
    },
  );
}
