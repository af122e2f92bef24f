import {
  asSchema,
  experimental_streamTextLowMemory,
  isStepCount,
  type LanguageModel,
  type ModelMessage,
  type StepResult,
  streamText,
  type ToolSet,
} from "ai";
import { logModelFailure, type ModelFailure, modelFailure } from "../llm/errors";
import { composeSystemPrompt, type PromptAgent } from "../llm/system-prompt";
import { logError } from "../platform/log";
import type { ToolProvider, TurnScope } from "../platform/turn-tools";
import { requiresApproval } from "./approval-patterns";
import { turnCredits } from "./credits";
import { boundedHistory, type HistoryMessage } from "./history";

export const MAX_STEPS = 12;
export const TURN_DEADLINE_MS = 120_000;
export const TOOL_DEADLINE_MS = 30_000;

export type TurnRequest = {
  env: Env;
  model: LanguageModel;
  /** The runtime profile the turn runs on: it sets the history budget and the credit rate. */
  profile: string;
  /** Every area's tools, in the order of the area list. */
  providers: readonly ToolProvider[];
  workspace: { id: string; name: string };
  userId: string;
  agent: PromptAgent & { id: string; skills: readonly string[]; mcpServers: readonly string[] };
  conversationId: string | null;
  /** The id the assistant message will have. */
  turnId: string;
  origin: string;
  history: readonly HistoryMessage[];
  prompt: string;
  /** Aborted when a participant stops the turn. */
  stopSignal?: AbortSignal;
  /** What the caller read for the areas' tools (see `TurnScope.prefetched`). */
  prefetched?: Readonly<Record<string, unknown>>;
  /**
   * The caller reads one stream of `result` (`stream`, or `toUIMessageStream()`) to its end
   * (or cancels it), and nothing else of `result`: the turn then keeps no copy of the stream of
   * its own (one pipeline instead of two tee'd ones) and `done` settles when that stream ends.
   */
  readsStream?: boolean;
  /**
   * A turn that can wait for a person (a conversation's room): the tools the agent's
   * `approval_required` names, and those the areas mark, pause the turn with an approval
   * request. Without it, such a call fails with an error the model sees.
   */
  approvals?: { required: readonly string[] };
  /** The turn so far, after the prompt, when it resumes after a decision (assistant and tool messages). */
  continuation?: readonly ModelMessage[];
};

export type ToolCallSummary = { name: string; ok: boolean };

export type TurnOutcome = {
  /** `answered`, `step_limit`, `deadline` and `stopped` store a reply; `failed` (the model did not answer) stores none. */
  finish: "answered" | "step_limit" | "deadline" | "stopped" | "failed";
  text: string;
  steps: number;
  toolCalls: ToolCallSummary[];
  artifactIds: string[];
  usage: { input_tokens: number; output_tokens: number; credits: number };
  /** What the provider said when the model call failed (also on a partial answer). */
  failure: ModelFailure | null;
};

type InputSchema = ToolSet[string]["inputSchema"];
/**
 * Per isolate: each tool input schema (a module's zod schema) as the AI SDK's schema, whose
 * JSON Schema is computed once; the SDK would convert the zod schema again on every call.
 */
const schemas = new WeakMap<object, InputSchema>();

function convertedOnce(schema: InputSchema): InputSchema {
  if (typeof schema !== "object" || schema === null) return schema;
  let converted = schemas.get(schema);
  if (!converted) {
    converted = asSchema(schema) as InputSchema;
    schemas.set(schema, converted);
  }
  return converted;
}

/** A tool that fails, or takes longer than 30 s, answers the model with an error instead of failing the turn. */
function withDeadline(tools: ToolSet): ToolSet {
  const out: ToolSet = {};
  for (const [name, t] of Object.entries(tools)) {
    const execute = t.execute;
    if (!execute) {
      out[name] = { ...t, inputSchema: convertedOnce(t.inputSchema) } as (typeof tools)[string];
      continue;
    }
    out[name] = {
      ...t,
      inputSchema: convertedOnce(t.inputSchema),
      execute: async (input: unknown, options: Parameters<typeof execute>[1]) => {
        // The tool's own work is told to stop too (a fetch in flight), not only abandoned.
        const stop = new AbortController();
        const abortSignal = options.abortSignal ? AbortSignal.any([options.abortSignal, stop.signal]) : stop.signal;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            const error = new Error(`${name} did not finish within ${TOOL_DEADLINE_MS / 1000} s`);
            stop.abort(error);
            reject(error);
          }, TOOL_DEADLINE_MS);
        });
        try {
          return await Promise.race([execute(input as never, { ...options, abortSignal }), late]);
        } finally {
          clearTimeout(timer);
        }
      },
    } as (typeof tools)[string];
  }
  return out;
}

type NeedsApproval = ToolSet[string]["needsApproval"];

/** Whether a call waits: the agent's list names the tool, or the tool's own area says so for this input. */
const needsApprovalOf =
  (name: string, required: readonly string[], own: NeedsApproval) =>
  async (input: unknown, options: Parameters<Extract<NeedsApproval, (...a: never[]) => unknown>>[1]) =>
    requiresApproval(required, name) || (typeof own === "function" ? await own(input as never, options) : own === true);

/**
 * In a turn that can wait (`approvals`), the SDK pauses on a call that needs approval; elsewhere
 * nobody could give it, so the call fails instead of running.
 */
function withApprovals(tools: ToolSet, approvals: TurnRequest["approvals"]): ToolSet {
  const out: ToolSet = {};
  for (const [name, t] of Object.entries(tools)) {
    const needs = needsApprovalOf(name, approvals?.required ?? [], t.needsApproval);
    if (approvals) {
      out[name] = { ...t, needsApproval: needs } as (typeof tools)[string];
      continue;
    }
    const execute = t.execute;
    out[name] = (
      execute
        ? {
            ...t,
            needsApproval: undefined,
            execute: async (input: unknown, options: Parameters<typeof execute>[1]) => {
              if (
                await needs(input, { toolCallId: options.toolCallId, messages: options.messages, context: undefined })
              )
                throw new Error(`${name} needs a person's approval, which only a conversation can ask for`);
              return execute(input as never, options);
            },
          }
        : t
    ) as (typeof tools)[string];
  }
  return out;
}

/** Asks every area for its tools; an area that fails drops out of this turn, it never fails the turn. */
async function gatherTools(scope: TurnScope, providers: readonly ToolProvider[]) {
  const offers = await Promise.all(
    providers.map((provide) =>
      provide(scope).catch((e) => {
        logError("tool provider failed", e);
        return { tools: {}, instructions: [] };
      }),
    ),
  );
  const tools: ToolSet = {};
  const instructions: string[] = [];
  for (const offer of offers) {
    for (const [name, t] of Object.entries(offer.tools)) {
      // The local-browser tools belong to /v1/agent-browser/ask alone.
      if (!name.startsWith("computer_")) tools[name] = t;
    }
    instructions.push(...(offer.instructions ?? []));
  }
  return { tools: withDeadline(tools), instructions };
}

function summarize(steps: readonly StepResult<ToolSet>[]): ToolCallSummary[] {
  const calls: ToolCallSummary[] = [];
  for (const step of steps) {
    for (const part of step.content) {
      if (part.type === "tool-result") calls.push({ name: part.toolName, ok: true });
      if (part.type === "tool-error") calls.push({ name: part.toolName, ok: false });
    }
  }
  return calls;
}

/**
 * Runs one agent turn: the agent's prompt plus its tools' instructions, the bounded history,
 * at most 12 steps, 120 s. The stream can be sent to a client as it comes; `done` settles when
 * the turn has ended (also if nobody reads the stream) with what the caller stores and bills.
 * One function for every surface: conversation messages, quick ask, email replies, MCP.
 */
export async function runTurn(req: TurnRequest) {
  const deadline = AbortSignal.timeout(TURN_DEADLINE_MS);
  const signal = req.stopSignal ? AbortSignal.any([deadline, req.stopSignal]) : deadline;
  const scope: TurnScope = {
    env: req.env,
    workspaceId: req.workspace.id,
    userId: req.userId,
    agent: { id: req.agent.id, slug: req.agent.slug, skills: req.agent.skills, mcpServers: req.agent.mcpServers },
    conversationId: req.conversationId,
    turnId: req.turnId,
    origin: req.origin,
    artifactIds: [],
    signal,
    prefetched: req.prefetched,
  };
  const gathered = await gatherTools(scope, req.providers);
  const tools = withApprovals(gathered.tools, req.approvals);
  const instructions = gathered.instructions;
  let failure: unknown = null;
  const finished: StepResult<ToolSet>[] = [];
  const options: Parameters<typeof streamText<ToolSet>>[0] = {
    model: req.model,
    instructions: composeSystemPrompt(req.agent, {
      workspaceName: req.workspace.name,
      today: new Date().toISOString().slice(0, 10),
      sections: instructions,
    }),
    messages: [
      ...boundedHistory(req.profile, req.history),
      { role: "user", content: req.prompt },
      ...(req.continuation ?? []),
    ],
    tools,
    stopWhen: isStepCount(MAX_STEPS),
    abortSignal: signal,
    maxRetries: 1,
    onError: ({ error }) => {
      failure = error;
    },
    onStepEnd: (step) => {
      finished.push(step);
    },
  };
  // A single consumer's result: it promises no replay, so the SDK tees nothing.
  const result = req.readsStream ? experimental_streamTextLowMemory(options) : streamText(options);

  const done = (async (): Promise<TurnOutcome> => {
    // Settles when the stream ends, fails or is cancelled (whoever reads it).
    if (!req.readsStream) await result.consumeStream({ onError: (e) => (failure ??= e) });
    const usage = await Promise.resolve(result.totalUsage).catch(() => null);
    const steps = finished;
    const text = steps
      .map((s) => s.text.trim())
      .filter(Boolean)
      .join("\n\n");
    const input = usage?.inputTokens ?? 0;
    const output = usage?.outputTokens ?? 0;
    const finish: TurnOutcome["finish"] = req.stopSignal?.aborted
      ? "stopped"
      : deadline.aborted
        ? "deadline"
        : failure && steps.length === 0
          ? "failed"
          : steps.length >= MAX_STEPS && steps.at(-1)?.finishReason === "tool-calls"
            ? "step_limit"
            : "answered";
    const provider = failure && finish !== "deadline" && finish !== "stopped" ? modelFailure(req.env, failure) : null;
    if (provider) logModelFailure("turn: model call failed", provider);
    const fallback: Record<TurnOutcome["finish"], string> = {
      answered: "I have no answer to that.",
      step_limit: `I stopped after ${MAX_STEPS} steps without finishing; try a narrower request.`,
      deadline: `I ran out of time after ${TURN_DEADLINE_MS / 1000} s and stopped before finishing.`,
      stopped: "",
      failed: "",
    };
    return {
      finish,
      text:
        finish === "deadline" || finish === "step_limit"
          ? [text, fallback[finish]].filter(Boolean).join("\n\n")
          : text || fallback[finish],
      steps: steps.length,
      toolCalls: summarize(steps),
      artifactIds: scope.artifactIds,
      usage: {
        input_tokens: input,
        output_tokens: output,
        credits: finish === "failed" ? 0 : turnCredits(req.profile, input, output),
      },
      failure: provider,
    };
  })();
  // `tools` as the SDK runs them: what maps their parts to UI message chunks needs them.
  return { result, done, tools };
}
