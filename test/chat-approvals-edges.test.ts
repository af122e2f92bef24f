import { describe, expect, it } from "vitest";
import { ApprovalListSchema } from "../src/conversations/approval-schemas";
import { ConversationSchema } from "../src/conversations/schemas";
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
