/** The reply the endpoint's agent drafts, and who reviews it. */
import { type AgentRecord, agentCapabilities, toAgentRow } from "../agents/service";
import { requireCredits } from "../billing/ledger";
import type { AreaRegistry } from "../http/registry";
import { agentLanguageModel } from "../llm/model";
import { baseUrl } from "../platform/env";
import { newId } from "../platform/ids";
import { ApiError } from "../platform/problem";
import type { HistoryMessage } from "../runtime/history";
import { runTurn } from "../runtime/turn";
import { type EndpointRecord, emailDomain } from "./endpoints";
import type { MessageRecord } from "./replies";
import type { Triage } from "./schemas";
import { repliesReferenced } from "./send";
import { asPrompt, readText } from "./triage-verdict";

const NO_TOOLS: AreaRegistry["tools"] = [];
/** Earlier exchanges of a thread a draft sees (each: their mail, our sent reply). */
const THREAD_EXCHANGES = 3;

/**
 * The thread so far, oldest first: for each reply of ours the message names in its
 * `References` / `In-Reply-To` (our Message-IDs are `<reply id@EMAIL_DOMAIN>`), the mail it
 * answered and what we sent. At most the last THREAD_EXCHANGES, of this mailbox only.
 */
async function threadHistory(env: Env, message: MessageRecord): Promise<HistoryMessage[]> {
  const ids = repliesReferenced(message.referencesHeader, emailDomain(env));
  if (!ids.length) return [];
  const { results } = await env.DB.prepare(
    `SELECT o.body, i.id, i.from_addr, i.subject, i.raw_key FROM email_messages o
     JOIN email_messages i ON i.id = o.reply_to_id
     WHERE o.id IN (SELECT value FROM json_each(?1)) AND o.workspace_id = ?2 AND o.endpoint_id = ?3
       AND o.direction = 'outbound' AND o.handling_state = 'sent'
     ORDER BY o.sent_at DESC LIMIT ?4`,
  )
    .bind(JSON.stringify(ids), message.workspaceId, message.endpointId, THREAD_EXCHANGES)
    .all<{ body: string; id: string; from_addr: string; subject: string | null; raw_key: string | null }>();
  const history: HistoryMessage[] = [];
  for (const r of results.reverse()) {
    const text = await readText(env, { rawKey: r.raw_key });
    history.push({ role: "user", content: asPrompt(r.from_addr, r.subject, text) });
    history.push({ role: "assistant", content: r.body });
  }
  return history;
}

/** The endpoint's review owner: the first of `deliver_to`, else the workspace's first admin. */
export async function reviewOwner(env: Env, endpoint: EndpointRecord): Promise<string> {
  const chosen = endpoint.deliverTo ? (JSON.parse(endpoint.deliverTo) as { user_ids: string[] }).user_ids : [];
  const row = await env.DB.prepare(
    `SELECT id FROM users WHERE workspace_id = ?1 AND erased_at IS NULL
       AND (id IN (SELECT value FROM json_each(?2)) OR (?3 = 0 AND role = 'admin'))
     ORDER BY (id IN (SELECT value FROM json_each(?2))) DESC, created_at, id LIMIT 1`,
  )
    .bind(endpoint.workspaceId, JSON.stringify(chosen), chosen.length)
    .first<{ id: string }>();
  if (row) return row.id;
  const admin = await env.DB.prepare(
    "SELECT id FROM users WHERE workspace_id = ?1 AND role = 'admin' AND erased_at IS NULL ORDER BY created_at, id LIMIT 1",
  )
    .bind(endpoint.workspaceId)
    .first<{ id: string }>();
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
  const workspace = await env.DB.prepare("SELECT id, name FROM workspaces WHERE id = ?1")
    .bind(endpoint.workspaceId)
    .first<{ id: string; name: string }>();
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
