import { type ToolSet, tool } from "ai";
import { z } from "zod";
import type { AuditEventInput } from "../audit/events";
import type { ToolProvider } from "../platform/turn-tools";
import { FACT_MAX_LENGTH } from "./schemas";
import {
  ASKING_AGENT,
  type AskingAgent,
  type AskingAgentState,
  askingAgentOf,
  factsForAgent,
  type MemoryOwner,
  rankFacts,
  rememberFact,
} from "./service";

/** Most facts one `recall` hands the model. */
export const RECALL_LIMIT = 8;

export const MEMORY_INSTRUCTIONS =
  "You have a memory of facts about the person you are talking with, shared by the agents of this workspace. " +
  "Call `recall` with a few keywords before answering when their preferences, background or ongoing work could matter. " +
  "Call `remember` with one short, self-contained fact when they share something lasting about themselves or ask you " +
  "to remember it. Never store passwords, secrets or one-off details. They can see and delete every fact.";

const FROZEN = "The user has frozen this agent out of their memory; facts about them can be neither read nor stored.";

const oneLine = (s: string) => s.replace(/\s+/g, " ").trim();

/** The event of a fact an agent remembered, on behalf of the turn's user (never its content). */
export const rememberedEvent =
  (
    owner: MemoryOwner,
    agent: Pick<AskingAgent, "slug">,
    turn: { agentId?: string; conversationId: string | null } = { conversationId: null },
  ) =>
  (factId: string): AuditEventInput => ({
    workspaceId: owner.workspaceId,
    kind: "memory.fact.create",
    intent: "remember",
    actor: { kind: "user", id: owner.userId },
    subjectUserId: owner.userId,
    agentId: turn.agentId,
    conversationId: turn.conversationId,
    target: `memory_fact:${factId}`,
    details: { agent_slug: agent.slug },
  });

const RememberInputSchema = z.object({
  content: z
    .string()
    .transform(oneLine)
    .pipe(z.string().min(1).max(FACT_MAX_LENGTH))
    .describe(`The fact, in one sentence (at most ${FACT_MAX_LENGTH} characters)`),
});

const RecallInputSchema = z.object({
  query: z.string().max(500).describe("Keywords or a question about the user"),
});

/** `remember` and `recall` for one agent acting for one user; both re-check the freeze when they run. */
export function memoryToolSet(
  env: Env,
  owner: MemoryOwner,
  agent: AskingAgent,
  turn: { agentId: string; conversationId: string | null },
): ToolSet {
  return {
    remember: tool({
      description: "Store one lasting fact about the user (a preference, their role, an ongoing project).",
      inputSchema: RememberInputSchema,
      execute: async (input) => {
        // Parsed by the schema already when the AI SDK calls it; bounded again for any other caller.
        const content = oneLine(input.content);
        if (!content || content.length > FACT_MAX_LENGTH)
          return { remembered: false as const, error: `A fact is 1 to ${FACT_MAX_LENGTH} characters.` };
        const fact = await rememberFact(env, owner, agent, content, rememberedEvent(owner, agent, turn));
        return fact ? { remembered: true as const, id: fact.id } : { remembered: false as const, error: FROZEN };
      },
    }),
    recall: tool({
      description: `Find what you know about the user: the facts most relevant to the query, at most ${RECALL_LIMIT}.`,
      inputSchema: RecallInputSchema,
      execute: async ({ query }) => {
        const facts = await factsForAgent(env, owner, agent);
        if (!facts) return { facts: [], error: FROZEN };
        return {
          facts: rankFacts(facts, query, RECALL_LIMIT).map((f) => ({ content: f.content, created_at: f.created_at })),
        };
      },
    }),
  };
}

/** The memory area's tools for a turn: none when the user froze the agent. */
export const memoryTools: ToolProvider = async (scope) => {
  const owner = { workspaceId: scope.workspaceId, userId: scope.userId };
  // Read in the turn's own batch when its caller did so; else here.
  const known = scope.prefetched?.[ASKING_AGENT] as AskingAgentState | undefined;
  const { agent, frozen } = known ?? (await askingAgentOf(scope.env, owner, scope.agent));
  if (frozen) return { tools: {} };
  const turn = { agentId: scope.agent.id, conversationId: scope.conversationId };
  return { tools: memoryToolSet(scope.env, owner, agent, turn), instructions: [MEMORY_INSTRUCTIONS] };
};
