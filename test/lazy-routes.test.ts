import { describe, expect, it } from "vitest";
import { AREAS } from "../src/app";
import { covers, loadRoutes } from "../src/http/lazy-routes";
import { openAIErrorSchema } from "../src/platform/openai-error";
import { problemSchema } from "../src/platform/problem";
import { call, expectProblem } from "./support/api";
import { signupWorkspace } from "./support/seed";

/**
 * Areas whose routes load on the first request under their paths: the routes answer as if
 * they were mounted in the app, and no route can sit outside the paths its area declares.
 */
describe("areas' routes loaded on first use", () => {
  it("every route of a lazy area lies under the paths the area declares", async () => {
    const lazy = AREAS.filter((a) => a.routes);
    expect(lazy.length).toBeGreaterThan(10);
    for (const area of lazy) {
      const router = await loadRoutes(area.routes!);
      const outside = router.routes
        .map((r) => r.path.replace(/\/\*$/, ""))
        .filter((path) => !covers(area.routes!, path));
      expect(outside, `${area.name}: routes outside its paths`).toEqual([]);
    }
  });

  it("builds no area's routes when the isolate starts: every area's load on first use", () => {
    expect(AREAS.filter((a) => a.router).map((a) => a.name)).toEqual([]);
    expect(AREAS.every((a) => a.routes)).toBe(true);
  });

  it("documents the shared error shapes, built on first use, as one component each", async () => {
    expect(problemSchema()).toBe(problemSchema());
    expect(openAIErrorSchema()).toBe(openAIErrorSchema());
    const doc = (await (await call("GET", "/v1/openapi.json")).json()) as {
      components: { schemas: Record<string, unknown> };
      paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>>;
    };
    expect(doc.components.schemas).toHaveProperty("Problem");
    expect(doc.components.schemas).toHaveProperty("OpenAIError");
    const notFound = doc.paths["/v1/agents/{id}"]!.get!.responses["404"]!;
    expect(notFound.content).toEqual({
      "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } },
    });
  });

  it("answers a lazy area's route with the app's middleware around it", async () => {
    const ws = await signupWorkspace();
    const res = await call("GET", "/v1/agents", { token: ws.adminToken });
    expect(res.status).toBe(200);
    expect(res.headers.get("X-Request-Id")).toBeTruthy();
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
  });

  it("hands a path an earlier area's paths cover, but its routes do not, to the area that has it", async () => {
    // The oauth area covers /.well-known/oauth-protected-resource; the MCP server owns this one.
    const res = await call("GET", "/.well-known/oauth-protected-resource/v1/mcp");
    expect(res.status).toBe(200);
    expect(((await res.json()) as { resource: string }).resource).toMatch(/\/v1\/mcp$/);
  });

  it("answers a path under an area's paths that no route has with the app's 404 problem", async () => {
    const res = await call("GET", "/v1/agents/x/nothing-here");
    const body = await expectProblem(res, 404, "not_found");
    expect(body.detail).toBe("No route for GET /v1/agents/x/nothing-here");
  });

  it("answers an error of the app's own middleware as a problem: a body over 1 MiB to a path no route has is a 413", async () => {
    // The app's own error handler renders problems as the areas' routers do.
    const res = await call("POST", "/v1/nothing-here", {
      rawBody: "x".repeat(1024 * 1024 + 1),
      headers: { "Content-Type": "application/json" },
    });
    const body = await expectProblem(res, 413, "payload_too_large");
    expect(body.detail).toBe("The request body exceeds 1 MiB");
    expect(body).toMatchObject({ request_id: res.headers.get("X-Request-Id") });
  });
});
