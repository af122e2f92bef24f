// Baseline for bench/suites/turn.mjs: the essential work of a conversation turn with raw prepared
// D1 statements and nothing around it (no router, no validation, no AI SDK, no participant
// check, no claim, no history, no ledger, no audit):
//
//   POST /v1/api/conversations/{id}/messages  { content }
//     1. the credential: token hash → token, user, workspace (one read)
//     2. the user message row (one insert)
//     3. the same mock chat-completions endpoint, streaming, read to its end: the text and
//        the usage are taken from the SSE chunks
//     4. the assistant message row (one insert)
//   and answers { user_message, reply } in the shape of the service's answer.
//
// The user row is written before the model call and the reply after it, as a minimal real
// implementation would (the question is kept even when the model fails).

import { json, sha256Hex, turnRequest, uuidv7 } from "./common.mjs";

const AUTH_SQL = `SELECT t.id, t.scopes, t.expires_at, u.id AS user_id, w.id AS workspace_id
  FROM api_tokens t
  JOIN users u ON u.id = t.user_id
  JOIN workspaces w ON w.id = t.workspace_id
  WHERE t.token_hash = ?1 AND t.revoked_at IS NULL AND u.erased_at IS NULL`;
const INSERT_USER_SQL = `INSERT INTO messages (id, conversation_id, workspace_id, role, author_user_id, content, created_at)
  VALUES (?1, ?2, ?3, 'user', ?4, ?5, ?6)`;
const INSERT_REPLY_SQL = `INSERT INTO messages (id, conversation_id, workspace_id, role, content,
    input_tokens, output_tokens, created_at)
  VALUES (?1, ?2, ?3, 'assistant', ?4, ?5, ?6, ?7)`;

// Prepared once per isolate, on first use (the global scope does no I/O).
let statements;
const prepared = (db) =>
  (statements ??= {
    auth: db.prepare(AUTH_SQL),
    user: db.prepare(INSERT_USER_SQL),
    reply: db.prepare(INSERT_REPLY_SQL),
  });

/** One streamed chat completion, read to its end: the concatenated deltas and the usage. */
async function complete(env, content) {
  const res = await fetch(`${env.LLM_BASE_URL.replace(/\/+$/, "")}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${env.LLM_API_KEY}` },
    body: JSON.stringify({
      model: env.LLM_MODEL,
      messages: [
        { role: "system", content: "You are a helpful assistant." },
        { role: "user", content },
      ],
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  if (!res.ok || !res.body) throw new Error(`model answered ${res.status}`);
  const decoder = new TextDecoder();
  let buffered = "";
  let text = "";
  let usage = null;
  const take = (line) => {
    if (!line.startsWith("data: ") || line === "data: [DONE]") return;
    const chunk = JSON.parse(line.slice(6));
    text += chunk.choices?.[0]?.delta?.content ?? "";
    if (chunk.usage) usage = chunk.usage;
  };
  for await (const bytes of res.body) {
    buffered += decoder.decode(bytes, { stream: true });
    let end = buffered.indexOf("\n\n");
    while (end >= 0) {
      take(buffered.slice(0, end));
      buffered = buffered.slice(end + 2);
      end = buffered.indexOf("\n\n");
    }
  }
  take(buffered.trim());
  return { text, usage };
}

export default {
  async fetch(request, env) {
    const s = prepared(env.DB);
    const checked = await turnRequest(request, async (bearer) => s.auth.bind(await sha256Hex(bearer)).first());
    if (checked.response) return checked.response;
    const { token, userMessage } = checked;
    const { conversation_id: conversationId, content } = userMessage;
    await s.user
      .bind(userMessage.id, conversationId, token.workspace_id, token.user_id, content, userMessage.created_at)
      .run();
    const { text, usage } = await complete(env, content);
    const reply = {
      id: uuidv7(),
      conversation_id: conversationId,
      role: "assistant",
      content: text,
      usage: { input_tokens: usage?.prompt_tokens ?? 0, output_tokens: usage?.completion_tokens ?? 0 },
      created_at: new Date().toISOString(),
    };
    await s.reply
      .bind(
        reply.id,
        conversationId,
        token.workspace_id,
        text,
        reply.usage.input_tokens,
        reply.usage.output_tokens,
        reply.created_at,
      )
      .run();
    return json(200, { user_message: userMessage, reply });
  },
};
