/**
 * The MCP server and client of the bundled Worker under `wrangler dev`, for both eras:
 *
 * - the conformance suite's requirements for MCP 2026-07-28 (`@modelcontextprotocol/conformance`
 *   0.2, `--requirements 2026-07-28`, run from node_modules, offline) against /v1/mcp. The suite
 *   sends no credentials, so it reaches the endpoint through a proxy in this process that adds a
 *   personal access token; BASE_URL is the proxy's origin, the one its clients use;
 * - the 1.x SDK's client (2025-11-25), the v2 SDK's client (2026-07-28) and the MCP Inspector's
 *   command line in either era against the endpoint;
 * - an agent's turn calling the service's own MCP server as a custom integration, through the
 *   v2 client of src/mcp/client.ts (OUTBOUND_ORIGIN_MAP sends its https URL to wrangler dev).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shBlocks } from "./readme";
import { type DevServer, readBody, signupToken, startDevServer } from "./server";

const ROOT = path.resolve(import.meta.dirname, "../..");
const PORT = Number(process.env.E2E_MCP_PORT ?? 8797);
const REQUIREMENTS = "2026-07-28";

/**
 * Scenarios of the requirement set that cannot apply to this server, and why: they call the
 * suite's fixture primitives (tools named `test_*`, prompts, resources) that a product server
 * does not have. Every other scenario, and the wire-schema check of every scenario, must pass.
 */
const NOT_APPLICABLE: Record<string, string> = {
  "completion-complete": "no prompts or resource templates to complete",
  "tools-call-simple-text": "calls the fixture tool test_simple_text",
  "tools-call-image": "calls the fixture tool test_image_content",
  "tools-call-audio": "calls the fixture tool test_audio_content",
  "tools-call-embedded-resource": "calls the fixture tool test_embedded_resource",
  "tools-call-mixed-content": "calls the fixture tool test_multiple_content_types",
  "tools-call-error": "calls the fixture tool test_error_handling",
  "tools-call-with-progress": "calls the fixture tool test_tool_with_progress (ask_agent's progress is tested below)",
  "resources-list": "no resources",
  "resources-read-text": "no resources",
  "resources-read-binary": "no resources",
  "resources-templates-read": "no resources",
  "sep-2164-resource-not-found": "no resources",
  "prompts-list": "no prompts",
  "prompts-get-simple": "no prompts",
  "prompts-get-with-args": "no prompts",
  "prompts-get-embedded-resource": "no prompts",
  "prompts-get-with-image": "no prompts",
  "json-schema-2020-12": "calls the fixture tool json_schema_2020_12_tool (not scored: pending)",
  "http-custom-header-server-validation": "no tool declares x-mcp-header (not scored: pending)",
};
// input_required (multi round-trip): the tools never ask the client for input.
for (const s of [
  "basic-elicitation",
  "basic-sampling",
  "basic-list-roots",
  "request-state",
  "multiple-input-requests",
  "multi-round",
  "missing-input-response",
  "non-tool-request",
  "result-type",
  "unsupported-methods",
  "tampered-state",
  "capability-check",
  "ignore-extra-params",
  "validate-input",
])
  NOT_APPLICABLE[`input-required-result-${s}`] = "calls fixture tools that ask for input; these tools never do";
/** Checks that cannot apply in scenarios that otherwise do. */
const CHECKS_NOT_APPLICABLE: Record<string, string> = {
  "sep-2575-server-rejects-undeclared-capability": "needs the diagnostic tool test_missing_capability",
  "sep-2575-missing-capability-http-400": "needs the diagnostic tool test_missing_capability",
  "sep-2575-http-server-no-independent-requests-on-stream": "needs the diagnostic tool test_streaming_elicitation",
  "sep-2575-server-no-log-without-loglevel": "needs the diagnostic tool test_logging_tool",
  "sep-2549-prompts-list-caching-hints": "no prompts",
  "sep-2549-resources-list-caching-hints": "no resources",
  "sep-2549-resources-templates-list-caching-hints": "no resource templates",
};
/** Scenarios that must have run and passed, at the least. */
const APPLICABLE = ["server-stateless", "tools-list", "caching", "dns-rebinding-protection", "http-header-validation"];

type Check = { id: string; status: string; errorMessage?: string };

let dev: DevServer;
let model: Server;
let proxy: Server;
let proxyOrigin: string;
let token = "";

/** A model that lists the agents through the MCP tool when asked, then answers with what it read. */
function fakeModel(): Promise<{ server: Server; baseUrl: string }> {
  const server = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as { model: string; messages: { role: string; content: unknown }[] };
    const last = body.messages.at(-1)!;
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: "e2e", object: "chat.completion.chunk", created: 0, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const usage = `data: ${JSON.stringify({ id: "e2e", object: "chat.completion.chunk", created: 0, model: body.model, choices: [], usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 } })}\n\n`;
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    if (last.role === "user" && String(last.content).includes("list the agents")) {
      const call = {
        index: 0,
        id: "call_mcp",
        type: "function",
        function: { name: "mcp__t_self__list_agents", arguments: "{}" },
      };
      res.end(chunk({ role: "assistant", tool_calls: [call] }) + chunk({}, "tool_calls") + usage + "data: [DONE]\n\n");
      return;
    }
    const text =
      last.role === "tool" ? `Read: ${JSON.stringify(last.content).slice(0, 200)}` : "The tide turns at six.";
    res.end(chunk({ role: "assistant", content: text }) + chunk({}, "stop") + usage + "data: [DONE]\n\n");
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }),
    ),
  );
}

/** Passes every request on to wrangler dev as it came (Host included), adding the token on /v1/mcp. */
function authProxy(): Promise<Server> {
  const server = createServer((req, res) => {
    const headers = { ...req.headers };
    if (token && req.url?.startsWith("/v1/mcp")) headers.authorization = `Bearer ${token}`;
    const upstream = request({ host: "127.0.0.1", port: PORT, path: req.url, method: req.method, headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    upstream.on("error", () => res.destroy());
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

beforeAll(async () => {
  const fake = await fakeModel();
  model = fake.server;
  proxy = await authProxy();
  proxyOrigin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  dev = await startDevServer(PORT, {
    BASE_URL: proxyOrigin,
    LLM_BASE_URL: fake.baseUrl,
    LLM_MODEL: "mcp-e2e",
    LLM_API_KEY: "fake",
    OUTBOUND_ORIGIN_MAP: JSON.stringify({ "self.mcp.e2e": `http://127.0.0.1:${PORT}` }),
  });
  token = await signupToken(dev.origin, "MCP E2E");
});

afterAll(async () => {
  await dev?.stop();
  await new Promise((resolve) => model?.close(resolve));
  await new Promise((resolve) => proxy?.close(resolve));
});

/** Runs a package's command from node_modules (`--offline`: npx may not fetch anything). */
async function npx(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; output: string }> {
  const child = spawn("npx", ["--offline", ...args], {
    cwd: ROOT,
    env: { ...process.env, npm_config_offline: "true", ...env },
  });
  let stdout = "";
  let output = "";
  child.stdout.on("data", (d) => {
    stdout += d;
    output += d;
  });
  child.stderr.on("data", (d) => (output += d));
  return { code: await new Promise<number | null>((resolve) => child.on("exit", resolve)), stdout, output };
}

/** Runs the suite from node_modules (`--offline`: npx may not fetch it) and reads every scenario's checks. */
async function conformance(
  url: string,
): Promise<{ code: number | null; output: string; results: Map<string, Check[]> }> {
  const out = mkdtempSync(path.join(tmpdir(), "mcp-conformance-"));
  try {
    const { code, output } = await npx([
      "conformance",
      "server",
      "--url",
      url,
      "--requirements",
      REQUIREMENTS,
      "-o",
      out,
    ]);
    const results = new Map<string, Check[]>();
    for (const dir of readdirSync(out)) {
      const scenario = dir.replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T.*$/, "");
      results.set(scenario, JSON.parse(readFileSync(path.join(out, dir, "checks.json"), "utf8")) as Check[]);
    }
    return { code, output, results };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

describe("MCP against wrangler dev", () => {
  it(`meets the conformance requirements of ${REQUIREMENTS} that apply to a stateless server with three tools`, async () => {
    const { output, results } = await conformance(`${proxyOrigin}/v1/mcp`);
    for (const scenario of APPLICABLE) expect(results.has(scenario), `${scenario} ran\n${output}`).toBe(true);
    const failed: string[] = [];
    for (const [scenario, checks] of results) {
      if (scenario.startsWith("tasks-")) continue; // the tasks extension: not scored, not offered
      for (const c of checks) {
        if (c.status !== "FAILURE" && c.status !== "WARNING") continue;
        const excused = c.id !== "wire-schema-valid" && (NOT_APPLICABLE[scenario] || CHECKS_NOT_APPLICABLE[c.id]);
        if (!excused) failed.push(`${scenario} / ${c.id}: ${c.status} ${c.errorMessage ?? ""}`);
      }
    }
    expect(failed).toEqual([]);
  }, 180_000);

  it("serves the 1.x SDK's client (2025-11-25) and the v2 SDK's client (2026-07-28) the same tools", async () => {
    const headers = { Authorization: `Bearer ${token}` };
    const legacy = new Client({ name: "e2e-legacy", version: "1.0.0" });
    await legacy.connect(
      new StreamableHTTPClientTransport(new URL(`${proxyOrigin}/v1/mcp`), { requestInit: { headers } }),
    );
    const modern = new V2Client({ name: "e2e-modern", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
    await modern.connect(new V2Transport(new URL(`${proxyOrigin}/v1/mcp`), { requestInit: { headers } }));
    expect(modern.getProtocolEra()).toBe("modern");
    const names = async (c: { listTools: () => Promise<{ tools: { name: string }[] }> }) =>
      (await c.listTools()).tools.map((t) => t.name);
    expect(await names(legacy)).toEqual(["list_agents", "ask_agent", "list_artifacts"]);
    expect(await names(modern)).toEqual(await names(legacy));

    const updates: { message?: string }[] = [];
    const asked = await modern.callTool(
      { name: "ask_agent", arguments: { prompt: "When does the tide turn?" } },
      { onprogress: (p) => updates.push(p) },
    );
    expect(asked.content).toEqual([{ type: "text", text: "The tide turns at six." }]);
    const conversationId = (asked.structuredContent as { conversation_id: string }).conversation_id;
    expect(updates[0]?.message).toContain(conversationId);
    const legacyAsked = await legacy.callTool({ name: "ask_agent", arguments: { prompt: "And tomorrow?" } });
    expect(legacyAsked.structuredContent).toMatchObject({ reply: "The tide turns at six.", agent_slug: "assistant" });
    await legacy.close();
    await modern.close();
  });

  it("the README's request of each protocol version, run verbatim, lists the same tools", () => {
    const [block = ""] = shBlocks("## Connect an MCP client");
    const run = spawnSync("bash", ["-euo", "pipefail", "-c", block.replaceAll("http://localhost:8787", dev.origin)], {
      env: { ...process.env, TOKEN: token },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const [modern, legacy] = run.stdout
      .split(/(?<=\})(?=\{"(?:result|jsonrpc)")/)
      .map((answer) => JSON.parse(answer) as { result: { tools: { name: string }[]; resultType?: string } });
    expect(modern!.result.resultType).toBe("complete");
    expect(legacy!.result.resultType).toBeUndefined();
    for (const answer of [modern!, legacy!])
      expect(answer.result.tools.map((t) => t.name)).toEqual(["list_agents", "ask_agent", "list_artifacts"]);
  });

  it("the Inspector's command line speaks 2025-11-25 by default and 2026-07-28 with protocolEra modern", async () => {
    const work = mkdtempSync(path.join(tmpdir(), "mcp-inspector-"));
    // No browser, no keychain, and its files in a throwaway folder.
    const env = { MCP_AUTO_OPEN_ENABLED: "false", MCP_INSPECTOR_SECRET_STORE: "memory", MCP_STORAGE_DIR: work };
    const json = (stdout: string) => JSON.parse(stdout) as Record<string, unknown>;
    try {
      const url = `${dev.origin}/v1/mcp`;
      const adHoc = [
        "mcp-inspector",
        "--cli",
        url,
        "--transport",
        "http",
        "--header",
        `Authorization: Bearer ${token}`,
      ];
      const legacy = await npx([...adHoc, "--method", "initialize"], env);
      expect(legacy.code, legacy.output).toBe(0);
      expect(json(legacy.stdout)).toMatchObject({ protocolVersion: "2025-11-25" });
      const called = await npx([...adHoc, "--method", "tools/call", "--tool-name", "list_agents"], env);
      expect(json(called.stdout)).toMatchObject({ structuredContent: { agents: [{ slug: "assistant" }] } });

      const config = path.join(work, "mcp-servers.json");
      const svc = { type: "http", url, protocolEra: "modern", headers: { Authorization: `Bearer ${token}` } };
      writeFileSync(config, JSON.stringify({ mcpServers: { svc } }));
      const modern = await npx(
        ["mcp-inspector", "--cli", "--config", config, "--server", "svc", "--method", "initialize"],
        env,
      );
      expect(modern.code, modern.output).toBe(0);
      expect(json(modern.stdout)).toMatchObject({ protocolVersion: "2026-07-28" });
      const listed = await npx(
        ["mcp-inspector", "--cli", "--config", config, "--server", "svc", "--method", "tools/list"],
        env,
      );
      expect((json(listed.stdout).tools as { name: string }[]).map((t) => t.name)).toEqual([
        "list_agents",
        "ask_agent",
        "list_artifacts",
      ]);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }, 120_000);

  it("an agent's turn calls an MCP server (the service's own) through the v2 client", async () => {
    const api = (p: string, body: unknown) =>
      fetch(`${dev.origin}${p}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
    const custom = await api("/v1/mcp/custom", {
      slug: "self",
      name: "Self",
      url: "https://self.mcp.e2e/v1/mcp",
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(custom.status).toBe(201);
    const conversation = (await (await api("/v1/api/conversations", {})).json()) as { id: string };
    const res = await api(`/v1/api/conversations/${conversation.id}/messages`, { content: "Please list the agents." });
    expect(res.status).toBe(200);
    const { reply } = (await res.json()) as { reply: { content: string; tool_calls: { name: string; ok: boolean }[] } };
    expect(reply.tool_calls).toEqual([{ name: "mcp__t_self__list_agents", ok: true }]);
    expect(reply.content).toContain("assistant");
    expect(dev.output()).toMatch(/POST \/v1\/mcp 200/);
  });
});
