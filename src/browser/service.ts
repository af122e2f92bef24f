import { generateText, isStepCount, type LanguageModel } from "ai";
import {
  CONNECTION_META_HEADER,
  type ConnectionInfo,
  type ConnectionMeta,
} from "../../durable-objects/browser-session";
import { type CommandOutcome, LIMITS, type Method } from "../../durable-objects/protocol";
import type { AgentRow } from "../agents/schemas";
import { listAgents } from "../agents/service";
import type { Caller } from "../auth/caller";
import { stillLive } from "../auth/held";
import { logModelFailure, modelError, modelFailure } from "../llm/errors";
import { languageModel } from "../llm/model";
import { composeSystemPrompt } from "../llm/system-prompt";
import { newId } from "../platform/ids";
import { ApiError, badRequest, notFound } from "../platform/problem";
import { browserSession } from "./client";
import { BROWSER_PROMPT } from "./prompt";
import { ASK_TIMEOUT, type AskRequest } from "./schemas";
import { BrowserCommandError, type BrowserTurn, computerTools } from "./tools";

/** Model steps one ask may take (each step may run browser commands). */
export const MAX_ASK_STEPS = 12;

/**
 * Hands an authenticated upgrade to the user's object. Returns the object's 101 response
 * and the id of the new connection.
 */
export async function connectBrowser(env: Env, caller: Caller): Promise<{ response: Response; connectionId: string }> {
  const meta: ConnectionMeta = {
    userId: caller.userId,
    workspaceId: caller.workspace.id,
    tokenId: caller.credentialId,
    connectionId: newId(),
  };
  const response = await browserSession(env, caller.userId).fetch("https://browser-session/connect", {
    headers: { Upgrade: "websocket", [CONNECTION_META_HEADER]: JSON.stringify(meta) },
  });
  return { response, connectionId: meta.connectionId };
}

/**
 * The user's live browser connection, or null. The socket's own token is re-checked on every
 * ask, so revoking it (or erasing its user) cuts the browser off although the socket was
 * authenticated long before; such a connection is closed.
 */
export async function liveConnection(env: Env, caller: Caller): Promise<ConnectionInfo | null> {
  const browser = browserSession(env, caller.userId);
  const info = await browser.connection();
  if (!info) return null;
  const [live] = await stillLive(env, [{ kind: "pat", id: info.tokenId }]);
  if (!live) {
    await browser.disconnect("the connection's token is no longer valid");
    return null;
  }
  return info;
}

async function pickAgent(env: Env, workspaceId: string, slug: string | undefined): Promise<AgentRow> {
  const agents = await listAgents(env, workspaceId);
  const agent = slug
    ? agents.find((a) => a.slug === slug || a.aliases.includes(slug))
    : agents.find((a) => a.is_default);
  if (!agent) throw notFound(slug ? `No agent @${slug} in this workspace` : "The workspace has no default agent");
  if (agent.status !== "enabled") throw badRequest("agent_disabled", `The agent @${agent.slug} is disabled`);
  return agent;
}

/** Sets the browser-session flag for one turn: `svc:computer` is added here and nowhere else. */
function openBrowserTurn(caller: Caller): BrowserTurn {
  return { browserSession: true, scopes: new Set([...caller.scopes, "svc:computer"]) };
}

export type AskFinish = "answered" | "step_limit" | "tool_failed" | "disconnected" | "deadline";

export type AskOutcome = {
  reply: string;
  steps: number;
  agent: AgentRow;
  finish: AskFinish;
  /** Browser commands run, by method name only (never their parameters or results). */
  methods: Method[];
  durationMs: number;
};

/** What the ask service takes from outside; tests pass an AI SDK mock model here. */
export type AskDeps = { model?: (env: Env, modelId: string | null | undefined) => LanguageModel | null };

const DISCONNECTED = new Set(["disconnected", "not connected"]);

function failureReply(e: BrowserCommandError): { reply: string; finish: AskFinish } {
  const { method, outcome } = e;
  if (DISCONNECTED.has(outcome.error)) {
    return {
      finish: "disconnected",
      reply: `Your browser disconnected while running ${method}, so I stopped. Reconnect the extension and ask again.`,
    };
  }
  if (outcome.error === "timeout") {
    return {
      finish: "tool_failed",
      reply: `Your browser did not answer ${method} in time, so I stopped. ${outcome.message}`,
    };
  }
  return {
    finish: "tool_failed",
    reply: `The browser could not run ${method} (${outcome.error}: ${outcome.message}), so I stopped.`,
  };
}

/** The ask's overall deadline: an abort signal and a promise that settles as a timed-out command. */
type AskDeadline = {
  timeoutMs: number;
  at: number;
  abort: AbortController;
  timer: ReturnType<typeof setTimeout>;
  aborted: Promise<CommandOutcome>;
};

function startDeadline(started: number, timeoutMs: number): AskDeadline {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error("deadline")), timeoutMs);
  const aborted = new Promise<CommandOutcome>((resolve) =>
    abort.signal.addEventListener("abort", () =>
      resolve({ ok: false, error: "timeout", message: `The ask deadline of ${timeoutMs} ms passed` }),
    ),
  );
  return { timeoutMs, at: started + timeoutMs, abort, timer, aborted };
}

/** What the turn has done so far: commands run, model steps taken, the first failed command. */
type AskProgress = { methods: Method[]; steps: number; failure: BrowserCommandError | null };

/** Runs one browser command for the model, recording its method, never past the deadline. */
function commandRunner(env: Env, caller: Caller, deadline: AskDeadline, progress: AskProgress) {
  const browser = browserSession(env, caller.userId);
  return async (method: Method, params: Record<string, unknown>): Promise<CommandOutcome> => {
    progress.methods.push(method);
    const remaining = deadline.at - Date.now();
    if (remaining <= 0)
      return { ok: false, error: "timeout", message: `The ask deadline of ${deadline.timeoutMs} ms passed` };
    return Promise.race([
      browser.command(method, params, Math.min(LIMITS.defaultTimeoutMs, remaining)),
      deadline.aborted,
    ]);
  };
}

function recordStep(progress: AskProgress, step: { content: ReadonlyArray<{ type: string; error?: unknown }> }) {
  progress.steps += 1;
  for (const part of step.content) {
    if (part.type === "tool-error" && part.error instanceof BrowserCommandError) progress.failure ??= part.error;
  }
}

/** How a turn the model finished ends: a failed command, the step limit, or an answer. */
function finishedReply(
  result: { text: string; finishReason: string },
  progress: AskProgress,
): { reply: string; finish: AskFinish } {
  if (progress.failure) return failureReply(progress.failure);
  const text = result.text.trim();
  if (result.finishReason === "tool-calls" || !text) {
    return {
      reply: text || `I stopped after ${progress.steps} steps without finishing the task; try a narrower request.`,
      finish: "step_limit",
    };
  }
  return { reply: text, finish: "answered" };
}

/**
 * Runs one agent turn limited to the computer tools, synchronously, with a bounded number
 * of steps and an overall deadline. A dropped browser, a failing command or the deadline
 * ends the turn with a plain reply; only a model failure is an error (502).
 */
export async function askBrowser(env: Env, caller: Caller, input: AskRequest, deps: AskDeps = {}): Promise<AskOutcome> {
  const started = Date.now();
  const agent = await pickAgent(env, caller.workspace.id, input.agent_slug);
  const model = (deps.model ?? languageModel)(env, agent.model);
  if (!model) throw new ApiError(503, "model_not_configured", "No language model is configured for this service");

  const deadline = startDeadline(started, input.timeout_ms ?? ASK_TIMEOUT.default);
  const progress: AskProgress = { methods: [], steps: 0, failure: null };
  const run = commandRunner(env, caller, deadline, progress);
  const finish = ({ reply, finish: why }: { reply: string; finish: AskFinish }): AskOutcome => ({
    reply,
    steps: progress.steps,
    agent,
    finish: why,
    methods: progress.methods,
    durationMs: Date.now() - started,
  });
  try {
    const result = await generateText({
      model,
      instructions: composeSystemPrompt(agent, { workspaceName: caller.workspace.name, sections: [BROWSER_PROMPT] }),
      prompt: input.prompt,
      tools: computerTools(openBrowserTurn(caller), run),
      stopWhen: [isStepCount(MAX_ASK_STEPS), () => progress.failure !== null],
      abortSignal: deadline.abort.signal,
      maxRetries: 1,
      onStepFinish: (step) => recordStep(progress, step),
    });
    return finish(finishedReply(result, progress));
  } catch (e) {
    if (deadline.abort.signal.aborted) {
      const seconds = Math.round(deadline.timeoutMs / 1000);
      return finish({
        reply: `I ran out of time after ${seconds} s and stopped before finishing the task.`,
        finish: "deadline",
      });
    }
    if (progress.failure) return finish(failureReply(progress.failure));
    const provider = modelFailure(env, e);
    logModelFailure("browser ask: model call failed", provider);
    throw modelError(provider);
  } finally {
    clearTimeout(deadline.timer);
  }
}

/** Erasing a user ends their browser session at once (their tokens are revoked with them). */
export async function eraseBrowserSession(
  env: Env,
  _workspaceId: string,
  userId: string,
): Promise<Record<string, number>> {
  await browserSession(env, userId).disconnect("user erased");
  return {};
}
