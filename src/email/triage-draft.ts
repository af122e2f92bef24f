/** The reply the endpoint's agent drafts, and who reviews it. */
import { and, desc, eq, isNull, type SQLWrapper, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { type AgentRecord, agentCapabilities, toAgentRow } from "../agents/service";
import { requireCredits } from "../billing/ledger";
import { emailMessages, users, workspaces } from "../db/schema";
import type { AreaRegistry } from "../http/registry";
import { agentLanguageModel } from "../llm/model";
import { db } from "../platform/db";
import { baseUrl } from "../platform/env";
import { newId } from "../platform/ids";
import { literalLimit } from "../platform/limit";
import { ApiError } from "../platform/problem";
import type { HistoryMessage } from "../runtime/history";
import { runTurn } from "../runtime/turn";
import { type EndpointRecord, emailDomain } from "./endpoints";
import { firstAdmin, type MessageRecord } from "./replies";
import type { Triage } from "./schemas";
import { repliesReferenced } from "./send";
import { asPrompt, readText } from "./triage-verdict";

const NO_TOOLS: AreaRegistry["tools"] = [];
/** Earlier exchanges of a thread a draft sees (each: their mail, our sent reply). */
const THREAD_EXCHANGES = 3;

/** `column IN` a JSON array bound as one parameter (a list of any length). */
const inJson = (column: SQLWrapper, values: string[]) =>
  sql`${column} IN (SELECT value FROM json_each(${JSON.stringify(values)}))`;

/**
 * The thread so far, oldest first: for each reply of ours the message names in its
 * `References` / `In-Reply-To` (our Message-IDs are `<reply id@EMAIL_DOMAIN>`), the mail it
 * answered and what we sent. At most the last THREAD_EXCHANGES, of this mailbox only.
 */
async function threadHistory(env: Env, message: MessageRecord): Promise<HistoryMessage[]> {
  const ids = repliesReferenced(message.referencesHeader, emailDomain(env));
  if (!ids.length) return [];
  const reply = alias(emailMessages, "o");
  const mail = alias(emailMessages, "i");
  const results = await db(env)
    .select({ body: reply.body, fromAddr: mail.fromAddr, subject: mail.subject, rawKey: mail.rawKey })
    .from(reply)
    .innerJoin(mail, eq(mail.id, reply.replyToId))
    .where(
      and(
        inJson(reply.id, ids),
        eq(reply.workspaceId, message.workspaceId),
        eq(reply.endpointId, message.endpointId),
        eq(reply.direction, "outbound"),
        eq(reply.handlingState, "sent"),
      ),
    )
    .orderBy(desc(reply.sentAt))
    .limit(literalLimit(THREAD_EXCHANGES))
    .all();
  const history: HistoryMessage[] = [];
  for (const r of results.reverse()) {
    const text = await readText(env, r);
    history.push({ role: "user", content: asPrompt(r.fromAddr, r.subject, text) });
    history.push({ role: "assistant", content: r.body ?? "" });
  }
  return history;
}

/** The endpoint's review owner: the first of `deliver_to`, else the workspace's first admin. */
export async function reviewOwner(env: Env, endpoint: EndpointRecord): Promise<string> {
  const chosen = endpoint.deliverTo ? (JSON.parse(endpoint.deliverTo) as { user_ids: string[] }).user_ids : [];
  const d = db(env);
  if (chosen.length) {
    const row = await d
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.workspaceId, endpoint.workspaceId), isNull(users.erasedAt), inJson(users.id, chosen)))
      .orderBy(users.createdAt, users.id)
      .limit(literalLimit(1))
      .get();
    if (row) return row.id;
  }
  const admin = await firstAdmin(d, endpoint.workspaceId).get();
  if (!admin) throw new Error("the workspace has no admin to review email");
  return admin.id;
}

/** The agent's draft: one turn with the endpoint's instructions, the mail as the prompt. */
export async function draftReply(
  env: Env,
  endpoint: EndpointRecord,
  agent: AgentRecord,
  message: MessageRecord,
  text: string,
  triage: Triage,
) {
  const model = agentLanguageModel(env, toAgentRow(agent));
  if (!model) throw new ApiError(503, "model_not_configured", "No language model is configured");
  await requireCredits(env, endpoint.workspaceId);
  const workspace = await db(env)
    .select({ id: workspaces.id, name: workspaces.name })
    .from(workspaces)
    .where(eq(workspaces.id, endpoint.workspaceId))
    .get();
  const language = endpoint.defaultReplyLang ?? triage.language;
  const turn = await runTurn({
    env,
    model,
    profile: agent.runtimeProfile,
    // No tools: the prompt is an outsider's mail, and a draft never needs to act (prompt injection).
    providers: NO_TOOLS,
    workspace: workspace!,
    userId: await reviewOwner(env, endpoint),
    agent: { ...toAgentRow(agent), ...(await agentCapabilities(env, agent)) },
    conversationId: null,
    turnId: newId(),
    origin: baseUrl(env, "http://localhost"),
    // A reply to one of ours continues its thread: the earlier mails and our replies come first.
    history: await threadHistory(env, message),
    prompt:
      `${endpoint.instructions ? `${endpoint.instructions}\n\n` : ""}` +
      `Write the reply to this email, in ${language}. Answer with the reply's text only: no subject line, ` +
      `no headers, no placeholders.\n\n${asPrompt(message.fromAddr, message.subject, text)}`,
  });
  const outcome = await turn.done;
  if (outcome.finish === "failed" || !outcome.text.trim()) throw new Error("the model did not draft a reply");
  return { agent, outcome };
}
