/** The verdict on a received message: the endpoint's policies, then the model's triage. */
import { generateText, Output } from "ai";
import { and, eq, gte, isNull, ne, sql } from "drizzle-orm";
import { type AgentRecord, getAgentRecord, resolveAgent } from "../agents/service";
import { emailMessages, users } from "../db/schema";
import { agentLanguageModel } from "../llm/model";
import { db } from "../platform/db";
import type { EndpointRecord } from "./endpoints";
import type { MessageRecord } from "./replies";
import { type Triage, TriageSchema } from "./schemas";

/** Triage spam above this score (0-1) unless the endpoint sets its own `spam_score_max`. */
export const DEFAULT_SPAM_SCORE_MAX = 0.8;
/** The start of an email's text the model reads. */
const BODY_CHARS = 8000;

export type Verdict =
  | {
      state: "no_reply" | "rejected_sender" | "spam" | "escalated";
      reason: string;
      triage?: Triage;
      agentId?: string;
    }
  | { state: "reply"; review: boolean; reason: string; triage: Triage; agent: AgentRecord };

/** Glob of an address (`*@acme.com`, `ada@acme.com`), case-insensitive. */
export function matchesPattern(address: string, pattern: string): boolean {
  const re = new RegExp(
    `^${pattern
      .toLowerCase()
      .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*")}$`,
  );
  return re.test(address.toLowerCase());
}

async function senderAllowed(env: Env, endpoint: EndpointRecord, from: string): Promise<boolean> {
  if (endpoint.senderPolicy === "anyone") return true;
  if (endpoint.senderPolicy === "allowlist")
    return (JSON.parse(endpoint.allowPatterns) as string[]).some((p) => matchesPattern(from, p));
  const member = await db(env)
    .select({ id: users.id })
    .from(users)
    .where(
      and(eq(users.workspaceId, endpoint.workspaceId), eq(sql`lower(${users.email})`, from), isNull(users.erasedAt)),
    )
    .get();
  return member !== undefined;
}

/** Replies drafted today (UTC) by the endpoint, and to this sender. */
async function repliesToday(env: Env, endpoint: EndpointRecord, to: string) {
  const since = `${new Date().toISOString().slice(0, 10)}T00:00:00.000Z`;
  const row = await db(env)
    .select({
      total: sql<number>`count(*)`,
      sender: sql<number | null>`sum(${emailMessages.toAddrs} = ${JSON.stringify([to])})`,
    })
    .from(emailMessages)
    .where(
      and(
        eq(emailMessages.endpointId, endpoint.id),
        eq(emailMessages.direction, "outbound"),
        gte(emailMessages.occurredAt, since),
        ne(emailMessages.handlingState, "rejected"),
      ),
    )
    .get();
  return { total: row?.total ?? 0, sender: row?.sender ?? 0 };
}

export async function readText(env: Env, message: Pick<MessageRecord, "rawKey">): Promise<string> {
  const object = message.rawKey ? await env.FILES.get(message.rawKey) : null;
  if (!object) return "";
  const { default: PostalMime } = await import("postal-mime");
  const email = await PostalMime.parse(await object.arrayBuffer());
  return (email.text ?? email.html?.replace(/<[^>]+>/g, " ") ?? "").slice(0, BODY_CHARS);
}

export const asPrompt = (from: string, subject: string | null, text: string) =>
  `From: ${from}\nSubject: ${subject ?? ""}\n\n${text}`;

/** The model's reading of a message: category, one-line summary, language, spam score. */
async function triageWithModel(env: Env, message: MessageRecord, text: string): Promise<Triage | null> {
  const model = agentLanguageModel(env, { runtime_profile: "fast", model: null });
  if (!model) return null;
  const { output } = await generateText({
    model,
    output: Output.object({ schema: TriageSchema }),
    system:
      "You triage email that reached a company's mailbox. Classify it, summarize it in one sentence without " +
      "personal data, name its language as a BCP 47 tag, and rate how likely it is spam (0 to 1).",
    prompt: `From: ${message.fromAddr}\nSubject: ${message.subject ?? ""}\n\n${text}`,
    maxRetries: 1,
  });
  return output;
}

export async function decide(
  env: Env,
  endpoint: EndpointRecord,
  message: MessageRecord,
  text: string,
): Promise<Verdict> {
  if (!endpoint.enabled) return { state: "no_reply", reason: "endpoint_disabled" };
  if (message.unrouted) return { state: "no_reply", reason: "unrouted" };
  const agent = await endpointAgent(env, endpoint);
  if (agent.status !== "enabled") return { state: "no_reply", reason: "agent_disabled", agentId: agent.id };
  // `members` and `allowlist` trust the From address; a DMARC failure says it may be forged.
  if (endpoint.senderPolicy !== "anyone" && message.dmarc === "fail")
    return { state: "rejected_sender", reason: "dmarc_fail" };
  if (!(await senderAllowed(env, endpoint, message.fromAddr)))
    return { state: "rejected_sender", reason: "sender_policy" };
  if (message.autoSubmitted) return { state: "no_reply", reason: "auto_submitted" };
  const triage = await triageWithModel(env, message, text);
  if (!triage) return { state: "no_reply", reason: "model_not_configured" };
  const spamMax = endpoint.spamScoreMax === null ? DEFAULT_SPAM_SCORE_MAX : endpoint.spamScoreMax / 100;
  if (triage.spam_score > spamMax) return { state: "spam", reason: "spam_score", triage };
  const action = (JSON.parse(endpoint.categoryPolicy) as Record<string, string>)[triage.category] ?? "reply";
  if (action === "ignore") return { state: "no_reply", reason: "category_ignored", triage };
  if (action === "escalate" && endpoint.allowEscalation) return { state: "escalated", reason: "category", triage };
  if (endpoint.replyPolicy === "never") return { state: "no_reply", reason: "reply_policy_never", triage };
  const today = await repliesToday(env, endpoint, message.fromAddr);
  if (endpoint.maxTurnsPerDay !== null && today.total >= endpoint.maxTurnsPerDay)
    return { state: "no_reply", reason: "daily_limit", triage };
  if (endpoint.maxTurnsPerSenderDay !== null && today.sender >= endpoint.maxTurnsPerSenderDay)
    return { state: "no_reply", reason: "sender_daily_limit", triage };
  // A DMARC failure may be a forged sender: a person reads the reply before it goes.
  const review =
    endpoint.replyPolicy === "review" || action === "review" || action === "escalate" || message.dmarc === "fail";
  return { state: "reply", review, reason: message.dmarc === "fail" ? "dmarc_fail" : action, triage, agent };
}

/**
 * The agent that answers a mailbox: the one it names, else the workspace's default agent (which
 * is always enabled). A named agent that is disabled is returned as it is, and its mail goes
 * unanswered: a disabled agent answers on no surface, and its mailbox is not handed to another.
 */
async function endpointAgent(env: Env, endpoint: EndpointRecord): Promise<AgentRecord> {
  if (!endpoint.agentId) return resolveAgent(env, endpoint.workspaceId);
  return getAgentRecord(env, endpoint.workspaceId, endpoint.agentId);
}
