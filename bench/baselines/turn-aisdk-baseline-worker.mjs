// Baseline for bench/suites/turn.mjs: a conversation turn in a raw Worker that runs the same
// AI SDK `streamText` as the service (the `ai` package and `@ai-sdk/openai-compatible`, the
// model built as src/llm/model.ts builds it) and writes the same D1 rows a turn's end writes,
// in one batch. Bundled with esbuild (bench/lib/harness.mjs `bundleDriver`).
//
//   POST /v1/api/conversations/{id}/messages  { content }
//     1. the credential: token hash → token, user, workspace (one read)
//     2. streamText on the same mock, read to its end (text and usage)
//     3. one D1 batch: the user message and the reply (D1 `messages`), the debit (a `usage`
//        ledger row whose reference is the reply's id), the `conversation.turn` audit outbox
//        row, the conversation's message_count + 2 and last_message_at, its participants'
//        last_message_at
//   and answers { user_message, reply } in the shape of the service's answer.
//
// No router, no validation library, no participant check, no credit check, no history, no
// tools, no Durable Object: the room's work (its storage of the stream, one turn at a time,
// resumable events) is what the service adds over this.
import { hash } from "node:crypto";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { streamText } from "ai";
import { uuidv7 } from "uuidv7";
import { json, turnRequest } from "./common.mjs";

const AUTH_SQL = `SELECT t.id, t.scopes, t.expires_at, u.id AS user_id, w.id AS workspace_id, w.name AS workspace_name
  FROM api_tokens t
  JOIN users u ON u.id = t.user_id
  JOIN workspaces w ON w.id = t.workspace_id
  WHERE t.token_hash = ?1 AND t.revoked_at IS NULL AND u.erased_at IS NULL`;
const INSERT_MESSAGE_SQL = `INSERT INTO messages (id, conversation_id, workspace_id, role, author_user_id, content,
    input_tokens, output_tokens, created_at)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`;
const DEBIT_SQL = `INSERT INTO credit_ledger (id, workspace_id, amount, kind, reference, created_at)
  VALUES (?1, ?2, ?3, 'usage', ?4, ?5) ON CONFLICT DO NOTHING`;
const OUTBOX_SQL = "INSERT INTO audit_outbox (id, workspace_id, event, created_at) VALUES (?1, ?2, ?3, ?4)";
const CONVERSATION_SQL = `UPDATE conversations SET last_message_at = ?2, message_count = message_count + 2
  WHERE id = ?1 AND workspace_id = ?3`;
const PARTICIPANTS_SQL = "UPDATE conversation_participants SET last_message_at = ?2 WHERE conversation_id = ?1";

let statements;
const prepared = (db) =>
  (statements ??= {
    auth: db.prepare(AUTH_SQL),
    message: db.prepare(INSERT_MESSAGE_SQL),
    debit: db.prepare(DEBIT_SQL),
    outbox: db.prepare(OUTBOX_SQL),
    conversation: db.prepare(CONVERSATION_SQL),
    participants: db.prepare(PARTICIPANTS_SQL),
  });

/** As src/llm/model.ts builds it for an OpenAI-compatible endpoint. */
const modelOf = (env) =>
  createOpenAICompatible({
    name: "llm",
    baseURL: env.LLM_BASE_URL.replace(/\/+$/, ""),
    apiKey: env.LLM_API_KEY,
    supportsStructuredOutputs: true,
  }).chatModel(env.LLM_MODEL);

/** What a turn costs, as src/runtime/credits.ts counts it on the standard profile. */
const credits = (input, output) => Math.max(1, Math.ceil(((input + output) / 1000) * 2));

export default {
  async fetch(request, env) {
    const s = prepared(env.DB);
    const checked = await turnRequest(request, (bearer) => s.auth.bind(hash("sha256", bearer, "hex")).first(), uuidv7);
    if (checked.response) return checked.response;
    const { token, userMessage } = checked;
    const { conversation_id: conversationId, content } = userMessage;
    const result = streamText({
      model: modelOf(env),
      instructions: `You are the assistant of the workspace ${token.workspace_name}.`,
      messages: [{ role: "user", content }],
      maxRetries: 1,
    });
    const text = await result.text;
    const usage = await result.totalUsage;
    const input = usage.inputTokens ?? 0;
    const output = usage.outputTokens ?? 0;
    const at = new Date().toISOString();
    const reply = {
      id: uuidv7(),
      conversation_id: conversationId,
      role: "assistant",
      content: text,
      usage: { input_tokens: input, output_tokens: output, credits: credits(input, output) },
      created_at: at,
    };
    const event = {
      kind: "conversation.turn",
      outcome: "success",
      actorKind: "user",
      actorId: token.user_id,
      agentId: null,
      conversationId,
      target: `conversation:${conversationId}`,
      intent: "turn",
      subjectUserId: null,
      details: {
        message_id: reply.id,
        finish: "answered",
        usage: { input, output },
        credits: reply.usage.credits,
      },
      occurredAt: at,
    };
    const w = token.workspace_id;
    await env.DB.batch([
      s.message.bind(userMessage.id, conversationId, w, "user", token.user_id, content, 0, 0, userMessage.created_at),
      s.message.bind(reply.id, conversationId, w, "assistant", null, text, input, output, at),
      s.debit.bind(uuidv7(), w, -reply.usage.credits, reply.id, at),
      s.outbox.bind(uuidv7(), w, JSON.stringify(event), at),
      s.conversation.bind(conversationId, at, w),
      s.participants.bind(conversationId, at),
    ]);
    return json(200, { user_message: userMessage, reply });
  },
};
