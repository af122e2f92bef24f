import { describe, expect, it } from "vitest";
import { AgentRowSchema } from "../src/agents/schemas";
import { isToolPattern, requiresApproval } from "../src/runtime/approval-patterns";
import { call, expectProblem, parse } from "./support/api";
import { signupWorkspace } from "./support/seed";

describe("the agent setting approval_required", () => {
  it("is saved, returned with the agent and changed by a PATCH; unknown tool names are kept", async () => {
    const ws = await signupWorkspace();
    const created = await parse(
      await call("POST", "/v1/agents", {
        token: ws.adminToken,
        body: { slug: "ops", display_name: "Ops", approval_required: ["mcp__billing__*", "send_mail_later"] },
      }),
      AgentRowSchema,
    );
    expect(created.approval_required).toEqual(["mcp__billing__*", "send_mail_later"]);
    const patched = await parse(
      await call("PATCH", `/v1/agents/${created.id}`, {
        token: ws.adminToken,
        body: { approval_required: ["mcp__*"] },
      }),
      AgentRowSchema,
    );
    expect(patched.approval_required).toEqual(["mcp__*"]);
    const listed = (await (await call("GET", "/v1/agents", { token: ws.adminToken })).json()) as {
      agents: { slug: string; approval_required: string[] }[];
    };
    expect(listed.agents.find((a) => a.slug === "ops")?.approval_required).toEqual(["mcp__*"]);
    expect(listed.agents.find((a) => a.slug === "assistant")?.approval_required).toEqual([]);
  });

  // "`*` wildcard at the end of a segment … at most 50 entries"
  for (const [name, list] of [
    ["a wildcard inside a segment", ["mcp__bil*ing"]],
    ["an empty segment", ["mcp____x"]],
    ["a space", ["publish app"]],
    ["an empty name", [""]],
    ["more than 50 entries", Array.from({ length: 51 }, (_, i) => `tool_${i}`)],
  ] as const) {
    it(`refuses ${name} with 400`, async () => {
      const ws = await signupWorkspace();
      await expectProblem(
        await call("POST", "/v1/agents", {
          token: ws.adminToken,
          body: { slug: "ops", display_name: "Ops", approval_required: list },
        }),
        400,
      );
    });
  }

  it("matches names and segment wildcards", () => {
    expect(isToolPattern("mcp__*__delete_*")).toBe(true);
    expect(isToolPattern("*")).toBe(true);
    expect(isToolPattern("a**")).toBe(false);
    expect(requiresApproval(["publish_app"], "publish_app")).toBe(true);
    expect(requiresApproval(["publish_app"], "publish_apps")).toBe(false);
    expect(requiresApproval(["mcp__*"], "mcp__billing__refund")).toBe(true);
    expect(requiresApproval(["mcp__billing__*"], "mcp__billing__refund")).toBe(true);
    expect(requiresApproval(["mcp__billing__*"], "mcp__crm__refund")).toBe(false);
    expect(requiresApproval(["mcp__*__delete_*"], "mcp__crm__delete_contact")).toBe(true);
    expect(requiresApproval(["mcp__*__delete_*"], "mcp__crm__x__delete_contact")).toBe(false);
    expect(requiresApproval(["web_*"], "web_search")).toBe(true);
  });
});
