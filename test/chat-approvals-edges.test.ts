import { describe, expect, it } from "vitest";
import { ApprovalListSchema } from "../src/conversations/approval-schemas";
import { ConversationSchema } from "../src/conversations/schemas";
import { ChatCompletionChunkSchema, ChatCompletionSchema } from "../src/openai/schemas";
import { openAIErrorSchema } from "../src/platform/openai-error";
import { requireApprovalOf } from "./support/agents";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { scriptedModels } from "./support/scripted-llm";
import { addUser, signupWorkspace } from "./support/seed";
import { userMessage } from "./support/ui-chat";

const { script } = scriptedModels();

const FILE = { name: "plan.md", content: "the plan" };

/** A conversation whose turn waits for a person's approval of `deliver_file`. */
async function pausedConversation() {
  const ws = await signupWorkspace();
  await requireApprovalOf(ws.adminToken, ["deliver_file"]);
  const conversation = await parse(
    await call("POST", "/v1/api/conversations", { token: ws.adminToken, body: {} }),
    ConversationSchema,
  );
  const model = script({ tool: "deliver_file", args: FILE }, { text: "Done." });
  const asked = await call("POST", `/v1/api/conversations/${conversation.id}/messages`, {
    token: ws.adminToken,
    body: { content: "Write the plan to a file" },
    headers: { Accept: "text/event-stream" },
  });
  await asked.text();
  const { approvals } = await parse(
    await call("GET", "/v1/api/approvals", { token: ws.adminToken }),
    ApprovalListSchema,
  );
  expect(approvals).toHaveLength(1);
  return { ws, conversationId: conversation.id, approval: approvals[0]!, model };
}

describe("POST /v1/chat/completions in a conversation whose turn waits for an approval", () => {
  // "A new message while an approval waits → 409 `approval_pending`."
  it("answers 409 approval_pending in OpenAI's shape, as its OpenAPI entry says", async () => {
    const { ws, conversationId, model } = await pausedConversation();
    const res = await call("POST", "/v1/chat/completions", {
      token: ws.adminToken,
      body: { model: "default", messages: [{ role: "user", content: "Anything else?" }] },
      headers: { "X-Conversation-Id": conversationId },
    });
    expect(res.status).toBe(409);
    const { error } = openAIErrorSchema().parse(await res.json());
    expect(error).toMatchObject({ code: "approval_pending", type: "invalid_request_error" });
    expect(model.requests).toHaveLength(1);

    const doc = (await (await call("GET", "/v1/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    };
    expect(doc.paths["/v1/chat/completions"]!.post!.responses["409"]!.description).toContain("approval_pending");
  });
});

describe("POST /v1/chat/completions whose turn stops to wait for an approval", () => {
  /** A workspace whose default agent waits for approval on `deliver_file`, and a completion that calls it. */
  async function pausingCompletion(stream: boolean) {
    const ws = await signupWorkspace();
    await requireApprovalOf(ws.adminToken, ["deliver_file"]);
    script({ tool: "deliver_file", args: FILE }, { text: "Done." });
    const res = await call("POST", "/v1/chat/completions", {
      token: ws.adminToken,
      body: { model: "default", stream, messages: [{ role: "user", content: "Write the plan to a file" }] },
    });
    expect(res.status).toBe(200);
    // A streamed turn's approvals are stored as it ends: its stream is read first.
    const body = await res.text();
    const { approvals } = await parse(
      await call("GET", "/v1/api/approvals", { token: ws.adminToken }),
      ApprovalListSchema,
    );
    expect(approvals).toHaveLength(1);
    return { body, approval: approvals[0]! };
  }

  it("answers what the agent said so far (here nothing), with pending_approvals naming the approval to decide", async () => {
    const { body, approval } = await pausingCompletion(false);
    const completion = ChatCompletionSchema.parse(JSON.parse(body));
    expect(completion.choices[0]!.message.content).toBe("");
    expect(completion.pending_approvals).toEqual([{ id: approval.id, tool_name: "deliver_file" }]);
    expect(completion.conversation_id).toBe(approval.conversation_id);
  });

  it("streamed: the chunk with finish_reason carries pending_approvals; the others do not", async () => {
    const { body, approval } = await pausingCompletion(true);
    const chunks = body
      .split("\n\n")
      .filter((e) => e.startsWith("data: {"))
      .map((e) => ChatCompletionChunkSchema.parse(JSON.parse(e.slice(6))));
    const finish = chunks.filter((c) => c.choices[0]?.finish_reason === "stop");
    expect(finish).toHaveLength(1);
    expect(finish[0]!.pending_approvals).toEqual([{ id: approval.id, tool_name: "deliver_file" }]);
    expect(chunks.filter((c) => c.pending_approvals)).toHaveLength(1);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("");
  });

  it("a completion that waits for nothing has no pending_approvals", async () => {
    const ws = await signupWorkspace();
    script({ text: "Plain answer." });
    const res = await call("POST", "/v1/chat/completions", {
      token: ws.adminToken,
      body: { model: "default", messages: [{ role: "user", content: "Hello" }] },
    });
    const completion = ChatCompletionSchema.parse(await res.json());
    expect(completion.choices[0]!.message.content).toBe("Plain answer.");
    expect(completion).not.toHaveProperty("pending_approvals");
  });
});

describe("POST /v1/api/chat with approval responses", () => {
  // "`POST /v1/api/conversations/{id}/approvals/{approval_id}` … (conversations:write, a participant)":
  // the AI SDK's way to decide is held to the same rule.
  it("from a member who does not take part in the conversation: 404, nothing decided, no turn resumed", async () => {
    const { ws, conversationId, approval, model } = await pausedConversation();
    const outsider = await addUser(ws.adminToken, "member", ["conversations:read", "conversations:write"]);
    const res = await call("POST", "/v1/api/chat", {
      token: outsider.token,
      body: {
        id: conversationId,
        messages: [
          userMessage("q1", "Write the plan to a file"),
          {
            id: approval.turn_id,
            role: "assistant",
            parts: [
              {
                type: "tool-deliver_file",
                toolCallId: "call_1",
                state: "approval-responded",
                input: FILE,
                approval: { id: approval.id, approved: true },
              },
            ],
          },
        ],
        trigger: "submit-message",
      },
    });
    await expectProblem(res, 404);
    const { approvals } = await parse(
      await call("GET", "/v1/api/approvals", { token: ws.adminToken }),
      ApprovalListSchema,
    );
    expect(approvals.map((a) => [a.id, a.state])).toEqual([[approval.id, "pending"]]);
    expect(await auditEvents(ws.workspace.id, "approval.decided")).toEqual([]);
    expect(model.requests).toHaveLength(1);
  });
});
