import { env } from "cloudflare:workers";
import type { ToolSet } from "ai";
import { MockImageModelV4, MockLanguageModelV4 } from "ai/test";
import { HttpResponse, http } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SkillCatalogueSchema } from "../src/agents/schemas";
import { artifactKey, createArtifact } from "../src/artifacts/store";
import type { AuditEventInput } from "../src/audit/events";
import { newId } from "../src/platform/ids";
import type { TurnScope } from "../src/platform/turn-tools";
import { CONFIGURED_MODELS, type ModelSource, skillStatus } from "../src/skills/availability";
import { htmlMainText, TEXT_LIMIT } from "../src/skills/extract";
import { RESEARCH_STEPS } from "../src/skills/research";
import { skillToolProvider } from "../src/skills/tools";
import { fromB64, IMAGES } from "./support/agents";
import { call, parse } from "./support/api";
import { callWith } from "./support/app";
import { answer, toolCall, toolResults } from "./support/mock-model";
import { makeDocx, makeXlsx } from "./support/office";
import { makePdf } from "./support/pdf";
import { signupWorkspace } from "./support/seed";

// The skills' tools run as an agent turn would run them (the provider called with a
// TurnScope, each tool's `execute` directly), against fakes of the outside services that
// answer like the real ones: a Brave-shaped search API, web pages, an image endpoint.

const SEARCH = {
  SEARCH_API_URL: "https://search.test/res/v1/web/search",
  SEARCH_API_KEY: "brave-test-key",
};
const ALL_SKILLS = [
  "web-search",
  "web-reader",
  "document-reader",
  "image-generation",
  "deep-research",
  "code-interpreter",
];

const ARTICLE = `<!doctype html>
<html><head><title>Tide tables &amp; harbours</title>
<style>p { color: red }</style><script>var secret = "tracking";</script></head>
<body>
<header><p>Site header text</p><nav><ul><li>Home</li><li>About</li></ul></nav></header>
<aside><p>Sidebar advert</p></aside>
<main>
  <h1>How tides work</h1>
  <p>Tides are driven by the <a href="/moon">Moon</a>&rsquo;s gravity &mdash; twice a day.</p>
  <script>document.write("injected")</script>
  <h2>Spring and neap</h2>
  <ul><li>Spring tides: largest range</li><li>Neap tides: smallest range</li></ul>
  <p>   Spaced
     out   text. </p>
</main>
<footer><p>Copyright footer</p></footer>
</body></html>`;

const searches: { q: string | null; count: string | null; token: string | null; ua: string | null }[] = [];
const server = setupServer(
  http.get(SEARCH.SEARCH_API_URL, ({ request }) => {
    const url = new URL(request.url);
    const q = url.searchParams.get("q");
    searches.push({
      q,
      count: url.searchParams.get("count"),
      token: request.headers.get("X-Subscription-Token"),
      ua: request.headers.get("User-Agent"),
    });
    if (request.headers.get("X-Subscription-Token") !== SEARCH.SEARCH_API_KEY) {
      return HttpResponse.json(
        { type: "ErrorResponse", error: { code: "SUBSCRIPTION_TOKEN_INVALID" } },
        { status: 422 },
      );
    }
    if (q === "rate limited") return HttpResponse.json({ type: "ErrorResponse" }, { status: 429 });
    return HttpResponse.json({
      type: "search",
      query: { original: q },
      web: {
        type: "search",
        results: [
          {
            title: "How tides work &amp; why",
            url: "https://news.example/article",
            description: "The <strong>Moon</strong>&#39;s gravity pulls the <strong>oceans</strong>.",
            type: "search_result",
          },
          {
            title: "Tide tables",
            url: "https://tides.example/tables",
            description: "Daily tables.",
            type: "search_result",
          },
        ],
      },
    });
  }),
  http.get("https://news.example/article", () => HttpResponse.html(ARTICLE)),
  http.get("https://news.example/no-main", () =>
    HttpResponse.html("<html><body><nav><p>Menu</p></nav><p>First paragraph.</p><p>Second one.</p></body></html>"),
  ),
  http.get("https://news.example/notes.txt", () => HttpResponse.text("Plain notes, as they are.")),
  http.get("https://news.example/paper.pdf", () =>
    HttpResponse.arrayBuffer(makePdf([["A paper about tides"]]).buffer as ArrayBuffer, {
      headers: { "Content-Type": "application/pdf" },
    }),
  ),
  http.get("https://news.example/photo.png", () =>
    HttpResponse.arrayBuffer(fromB64(IMAGES.png).buffer as ArrayBuffer, { headers: { "Content-Type": "image/png" } }),
  ),
  http.get("https://news.example/gone", () => new HttpResponse("gone", { status: 404 })),
  http.get("https://news.example/moved", () => HttpResponse.redirect("http://10.0.0.7/admin", 302)),
  http.get("https://news.example/huge", () => {
    const para = `<p>${"word ".repeat(2000)}</p>`;
    return HttpResponse.html(`<html><body>${para.repeat(400)}</body></html>`);
  }),
  http.get("https://news.example/long", () => {
    const para = `<p>${"word ".repeat(200)}</p>`;
    return HttpResponse.html(`<html><body>${para.repeat(100)}</body></html>`);
  }),
  http.post("https://llm.test/v1/images/generations", () =>
    HttpResponse.json({ created: 1, data: [{ b64_json: IMAGES.png }] }),
  ),
);

let workspaceId: string;
let userId: string;
let adminToken: string;
let otherWorkspaceId: string;
let otherUserId: string;

beforeAll(async () => {
  server.listen({ onUnhandledRequest: "error" });
  const ws = await signupWorkspace();
  workspaceId = ws.workspace.id;
  userId = ws.user.id;
  adminToken = ws.adminToken;
  const other = await signupWorkspace();
  otherWorkspaceId = other.workspace.id;
  otherUserId = other.user.id;
});
afterEach(() => {
  searches.length = 0;
  server.resetHandlers();
});
afterAll(() => server.close());

const NO_MODELS: ModelSource = { language: () => null, image: () => null };

function scopeFor(skills: string[], vars: Record<string, string> = {}, conversationId: string | null = newId()) {
  const scope: TurnScope = {
    env: { ...env, ...vars } as Env,
    workspaceId,
    userId,
    agent: { id: "agent-test", slug: "helper", skills, mcpServers: [] },
    conversationId,
    turnId: newId(),
    origin: "https://svc.example",
    artifactIds: [],
    signal: new AbortController().signal,
  };
  return scope;
}

async function toolsFor(scope: TurnScope, models: ModelSource = NO_MODELS) {
  return skillToolProvider(models)(scope);
}

async function run<T = Record<string, unknown>>(
  tools: ToolSet,
  name: string,
  input: unknown,
  abortSignal?: AbortSignal,
): Promise<T> {
  const t = tools[name];
  if (!t?.execute) throw new Error(`no tool ${name}`);
  return (await t.execute(input as never, {
    toolCallId: "call-1",
    messages: [],
    context: {} as never,
    abortSignal,
  })) as T;
}

async function fails(tools: ToolSet, name: string, input: unknown, abortSignal?: AbortSignal): Promise<string> {
  const err = await run(tools, name, input, abortSignal).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, `${name} should fail`).toBeInstanceOf(Error);
  return (err as Error).message;
}

const storedText = async (id: string) => (await env.FILES.get(artifactKey(workspaceId, id)))!.text();

describe("the skills' tool provider", () => {
  it("offers the tools of the agent's available skills only, with their instructions", async () => {
    const bare = await toolsFor(scopeFor(ALL_SKILLS));
    expect(Object.keys(bare.tools).sort()).toEqual(["read_document", "read_url"]);
    expect(bare.instructions).toHaveLength(2);

    const imageOnly: ModelSource = { language: () => null, image: () => new MockImageModelV4() };
    const configured = await toolsFor(scopeFor(ALL_SKILLS, SEARCH), {
      language: () => new MockLanguageModelV4(),
      image: imageOnly.image,
    });
    expect(Object.keys(configured.tools).sort()).toEqual([
      "generate_image",
      "read_document",
      "read_url",
      "research",
      "web_search",
    ]);
    expect(configured.instructions).toHaveLength(5);
    expect(configured.instructions!.join("\n")).toMatch(/web_search/);

    // research needs both a model and search; image generation needs an image model.
    const noSearch = await toolsFor(scopeFor(ALL_SKILLS), {
      language: () => new MockLanguageModelV4(),
      image: () => null,
    });
    expect(Object.keys(noSearch.tools).sort()).toEqual(["read_document", "read_url"]);
  });

  it("offers nothing for skills the agent does not have, and nothing for code-interpreter", async () => {
    expect((await toolsFor(scopeFor(["web-search"]))).tools).toEqual({});
    expect(Object.keys((await toolsFor(scopeFor(["web-search"], SEARCH))).tools)).toEqual(["web_search"]);
    expect(await toolsFor(scopeFor(["code-interpreter", "no-such-skill"], SEARCH))).toEqual({
      tools: {},
      instructions: [],
    });
    expect(await toolsFor(scopeFor([]))).toEqual({ tools: {}, instructions: [] });
  });

  it("follows the configuration through the model wiring when no models are injected", async () => {
    const vars = { ...SEARCH, LLM_BASE_URL: "https://llm.test/v1", LLM_MODEL: "m", IMAGE_MODEL: "img" };
    const { tools } = await skillToolProvider()(scopeFor(ALL_SKILLS, vars));
    expect(Object.keys(tools)).toContain("research");
    expect(Object.keys(tools)).toContain("generate_image");
    expect(skillStatus({ ...env, LLM_BASE_URL: "https://llm.test/v1" } as Env, "image-generation")).toEqual({
      available: false,
      unavailable_reason: expect.stringMatching(/IMAGE_MODEL/),
    });
    expect(skillStatus(env, "web-search", CONFIGURED_MODELS).unavailable_reason).toMatch(/SEARCH_API_URL/);
  });
});

describe("web_search", () => {
  it("asks the Brave-shaped provider and answers title, url and plain-text snippet", async () => {
    const { tools } = await toolsFor(scopeFor(["web-search"], { ...SEARCH, BASE_URL: "https://agents.example" }));
    const out = await run<{ results: unknown[] }>(tools, "web_search", { query: "why are there tides" });
    expect(out.results).toEqual([
      {
        title: "How tides work & why",
        url: "https://news.example/article",
        snippet: "The Moon's gravity pulls the oceans.",
      },
      { title: "Tide tables", url: "https://tides.example/tables", snippet: "Daily tables." },
    ]);
    expect(searches).toEqual([
      {
        q: "why are there tides",
        count: "8",
        token: "brave-test-key",
        ua: "WorkspaceAgentService/1.0 (+https://agents.example)",
      },
    ]);
  });

  it("turns provider errors into clear tool errors", async () => {
    const { tools } = await toolsFor(scopeFor(["web-search"], SEARCH));
    expect(await fails(tools, "web_search", { query: "rate limited" })).toMatch(/rate limiting/);
    const wrongKey = await toolsFor(scopeFor(["web-search"], { ...SEARCH, SEARCH_API_KEY: "wrong" }));
    expect(await fails(wrongKey.tools, "web_search", { query: "x" })).toBe(
      "The search provider answered with HTTP 422",
    );
  });
});

describe("read_url", () => {
  const reader = async () => (await toolsFor(scopeFor(["web-reader"]))).tools;

  it("answers a page's main text: headings, paragraphs and list items, without scripts, navigation or chrome", async () => {
    const page = await run<{ url: string; title: string; content: string; truncated: boolean }>(
      await reader(),
      "read_url",
      { url: "https://news.example/article" },
    );
    expect(page).toEqual({
      url: "https://news.example/article",
      title: "Tide tables & harbours",
      content: [
        "# How tides work",
        "Tides are driven by the Moon’s gravity — twice a day.",
        "## Spring and neap",
        "- Spring tides: largest range",
        "- Neap tides: smallest range",
        "Spaced out text.",
      ].join("\n"),
      truncated: false,
    });
  });

  it("keeps the whole body's paragraphs when the page marks no main content, still without navigation", async () => {
    const page = await run<{ content: string }>(await reader(), "read_url", { url: "https://news.example/no-main" });
    expect(page.content).toBe("First paragraph.\nSecond one.");
  });

  it("reads plain text and PDF answers too", async () => {
    const tools = await reader();
    expect((await run<{ content: string }>(tools, "read_url", { url: "https://news.example/notes.txt" })).content).toBe(
      "Plain notes, as they are.",
    );
    expect(
      (await run<{ content: string }>(tools, "read_url", { url: "https://news.example/paper.pdf" })).content,
    ).toContain("A paper about tides");
  });

  it("caps the text it hands the model", async () => {
    const page = await run<{ content: string; truncated: boolean }>(await reader(), "read_url", {
      url: "https://news.example/long",
    });
    expect(page.truncated).toBe(true);
    expect(page.content.length).toBeGreaterThan(39_000);
    expect(page.content.length).toBeLessThanOrEqual(40_000);
  });

  it("fails clearly for private hosts, redirects to them, errors, non-pages and oversized bodies", async () => {
    const tools = await reader();
    expect(await fails(tools, "read_url", { url: "https://169.254.169.254/latest/meta-data" })).toMatch(
      /^Refused to fetch .*IP address literals/,
    );
    expect(await fails(tools, "read_url", { url: "https://localhost:8787/v1/health" })).toMatch(/local host names/);
    expect(await fails(tools, "read_url", { url: "https://news.example/moved" })).toMatch(
      /^Refused to fetch http:\/\/10\.0\.0\.7\/admin/,
    );
    expect(await fails(tools, "read_url", { url: "https://news.example/gone" })).toBe(
      "https://news.example/gone answered with HTTP 404",
    );
    expect(await fails(tools, "read_url", { url: "https://news.example/photo.png" })).toMatch(
      /is image\/png, not a page/,
    );
    expect(await fails(tools, "read_url", { url: "https://news.example/huge" })).toMatch(/larger than 2097152 bytes/);
  });
});

describe("deadlines", () => {
  it("stops a tool when the runtime's per-call signal or the turn's signal aborts", async () => {
    const perCall = new AbortController();
    perCall.abort();
    const { tools } = await toolsFor(scopeFor(["web-reader"]));
    expect(await fails(tools, "read_url", { url: "https://news.example/article" }, perCall.signal)).toBe(
      "The request to https://news.example/article was cancelled",
    );
    const turn = new AbortController();
    turn.abort();
    const ended = await toolsFor({ ...scopeFor(["web-search"], SEARCH), signal: turn.signal });
    expect(await fails(ended.tools, "web_search", { query: "x" }, new AbortController().signal)).toMatch(/cancelled/);
    expect(searches).toEqual([]);
  });
});

describe("HTML main-text extraction", () => {
  it("decodes entities, skips self-closing foreign elements and nested lists", async () => {
    const page = await htmlMainText(
      "<body><svg/><p>A &lt;tag&gt; &#x1F600; &#233;</p><ul><li>One<ul><li>Nested</li></ul></li></ul><br><p>Last</p></body>",
    );
    expect(page).toEqual({ title: null, text: "A <tag> 😀 é\n- One\n- Nested\nLast", truncated: false });
  });
});

/** The audit event createArtifact writes with the row, for files made here by the test itself. */
const createdEvent =
  (workspaceId: string) =>
  (row: { id: string }): AuditEventInput => ({
    workspaceId: workspaceId,
    kind: "artifact.create",
    actor: { kind: "system", id: null },
    target: `artifact:${row.id}`,
  });

const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

describe("read_document", () => {
  const conversationId = newId();
  const ids: Record<string, string> = {};
  const put = async (name: string, contentType: string, bytes: Uint8Array | string, conv = conversationId) =>
    (
      await createArtifact(
        env,
        { workspaceId, conversationId: conv, producerUserId: userId, name, contentType, source: "upload" },
        typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes,
        createdEvent(workspaceId),
      )
    ).id;

  beforeAll(async () => {
    ids.text = await put("notes.txt", "text/plain; charset=utf-8", "Meeting notes: ship on Friday.");
    ids.markdown = await put("plan.md", "text/markdown", "# Plan\n\n- step one\n- step two\n");
    ids.csv = await put("sales.csv", "text/csv", "region,amount\nnorth,10\nsouth,20\n");
    ids.json = await put("config.json", "application/json", '{"retries":3}');
    ids.octetMd = await put("readme.md", "application/octet-stream", "Readme by extension");
    ids.html = await put("page.html", "text/html", ARTICLE);
    ids.pdf = await put(
      "report.pdf",
      "application/pdf",
      makePdf([["Quarterly report", "Revenue grew (a lot) in Q3."], ["Second page: outlook"]]),
    );
    ids.emptyPdf = await put("scan.pdf", "application/pdf", makePdf([[]]));
    ids.brokenPdf = await put("broken.pdf", "application/pdf", "%PDF-1.4 this is not really a pdf");
    ids.png = await put("photo.png", "image/png", fromB64(IMAGES.png));
    ids.docx = await put(
      "minutes.docx",
      DOCX,
      makeDocx([
        "Board minutes",
        "Present:\tAda & Grace <chairs>",
        {
          table: [
            ["Item", "Owner"],
            ["Budget, 2027", "Ada"],
          ],
        },
        "Next meeting on Friday.",
      ]),
    );
    ids.octetDocx = await put("letter.docx", "application/octet-stream", makeDocx(["Dear customer,"]));
    ids.xlsx = await put(
      "sales.xlsx",
      XLSX,
      makeXlsx([
        {
          name: "Q3 & Q4",
          rows: [
            ["region", "amount", "paid", "note"],
            ["north", 10.5, true, 'inline:says "hi", twice'],
            ["south", null, false, "Rich|text"],
          ],
        },
        { name: "Empty", rows: [] },
      ]),
    );
    ids.bigXlsx = await put(
      "big.xlsx",
      XLSX,
      makeXlsx([{ name: "Rows", rows: Array.from({ length: 5000 }, (_, i) => [`row ${i}`, i, "x".repeat(20)]) }]),
    );
    ids.notZip = await put("fake.docx", DOCX, "PK this is not a zip");
    ids.wrongZip = await put("sheet.xlsx", XLSX, makeDocx(["a Word document named .xlsx"]));
    // 17 MiB of spaces unpacked: the part is refused by its declared size, never inflated.
    ids.bomb = await put(
      "bomb.docx",
      DOCX,
      makeDocx([], `<w:document><w:body>${" ".repeat(17 * 1024 * 1024)}</w:body></w:document>`),
    );
    ids.elsewhere = await put("other.txt", "text/plain", "another conversation", newId());
    ids.foreign = (
      await createArtifact(
        env,
        {
          workspaceId: otherWorkspaceId,
          conversationId,
          producerUserId: otherUserId,
          name: "theirs.txt",
          contentType: "text/plain",
          source: "upload",
        },
        new TextEncoder().encode("other workspace"),
        createdEvent(otherWorkspaceId),
      )
    ).id;
  });

  const reader = async (conv: string | null = conversationId) =>
    (await toolsFor(scopeFor(["document-reader"], {}, conv))).tools;
  const read = async (key: string) =>
    run<{ content: string; name: string; content_type: string; truncated: boolean; pages?: number; sheets?: number }>(
      await reader(),
      "read_document",
      { artifact_id: ids[key] },
    );

  it("reads text, Markdown, CSV and JSON as they are", async () => {
    expect(await read("text")).toEqual({
      artifact_id: ids.text,
      name: "notes.txt",
      content_type: "text/plain; charset=utf-8",
      content: "Meeting notes: ship on Friday.",
      truncated: false,
    });
    expect((await read("markdown")).content).toBe("# Plan\n\n- step one\n- step two\n");
    expect((await read("csv")).content).toBe("region,amount\nnorth,10\nsouth,20\n");
    expect((await read("json")).content).toBe('{"retries":3}');
    expect((await read("octetMd")).content).toBe("Readme by extension");
  });

  it("reads HTML by its main text", async () => {
    const html = await read("html");
    expect(html.content).toContain("# How tides work");
    expect(html.content).not.toMatch(/Sidebar|footer|tracking|injected/);
  });

  it("reads a PDF's text page by page with unpdf inside workerd", async () => {
    const pdf = await read("pdf");
    expect(pdf.pages).toBe(2);
    expect(pdf.content).toMatch(/--- Page 1 ---\nQuarterly report\s+Revenue grew \(a lot\) in Q3\./);
    expect(pdf.content).toMatch(/--- Page 2 ---\nSecond page: outlook/);
  });

  // The catalogue promises it: "Reads text, CSV, HTML, PDF, Word (.docx) and Excel (.xlsx) files
  // shared in a conversation."
  it("reads a Word .docx: paragraphs as lines, tabs kept, table cells by tabs and rows by lines", async () => {
    const docx = await read("docx");
    expect(docx).toMatchObject({ name: "minutes.docx", content_type: DOCX, truncated: false });
    expect(docx.content).toBe(
      "Board minutes\nPresent:\tAda & Grace <chairs>\nItem\tOwner\nBudget, 2027\tAda\nNext meeting on Friday.",
    );
    expect((await read("octetDocx")).content).toBe("Dear customer,");
  });

  it("reads an Excel .xlsx: each sheet as CSV, shared and inline strings, numbers and booleans, gaps kept", async () => {
    const xlsx = await read("xlsx");
    expect(xlsx).toMatchObject({ name: "sales.xlsx", content_type: XLSX, truncated: false, sheets: 2 });
    expect(xlsx.content).toBe(
      [
        "--- Sheet: Q3 & Q4 ---",
        "region,amount,paid,note",
        'north,10.5,TRUE,"says ""hi"", twice"',
        "south,,FALSE,Richtext",
        "",
        "--- Sheet: Empty ---",
      ].join("\n"),
    );
    const big = await read("bigXlsx");
    expect(big.truncated).toBe(true);
    expect(big.content.length).toBe(TEXT_LIMIT);
    expect(big.content).toMatch(/^--- Sheet: Rows ---\nrow 0,0,x{20}\nrow 1,1,/);
  });

  it("fails clearly for unsupported, unreadable or textless files", async () => {
    const tools = await reader();
    expect(await fails(tools, "read_document", { artifact_id: ids.png })).toMatch(
      /reads text, Markdown, CSV, JSON, HTML, PDF, Word \(\.docx\) and Excel \(\.xlsx\) files; photo\.png is image\/png/,
    );
    expect(await fails(tools, "read_document", { artifact_id: ids.notZip })).toBe(
      "The file is not a readable Word (.docx) document",
    );
    expect(await fails(tools, "read_document", { artifact_id: ids.wrongZip })).toBe(
      "The file is not a readable Excel (.xlsx) workbook",
    );
    expect(await fails(tools, "read_document", { artifact_id: ids.bomb })).toBe(
      "The document's text (word/document.xml) is larger than the 16 MiB that can be read",
    );
    expect(await fails(tools, "read_document", { artifact_id: ids.brokenPdf })).toBe("The file is not a readable PDF");
    expect(await fails(tools, "read_document", { artifact_id: ids.emptyPdf })).toMatch(/no text layer/);
  });

  it("reads only artifacts of this conversation in this workspace", async () => {
    const tools = await reader();
    for (const key of ["elsewhere", "foreign"]) {
      expect(await fails(tools, "read_document", { artifact_id: ids[key] })).toBe(
        `No artifact ${ids[key]} in this conversation`,
      );
    }
    expect(await fails(tools, "read_document", { artifact_id: "nope" })).toBe("No artifact nope in this conversation");
    expect(await fails(await reader(null), "read_document", { artifact_id: ids.text })).toMatch(/No artifact/);
  });
});

describe("generate_image", () => {
  const png = fromB64(IMAGES.png);
  const prompts: (string | undefined)[] = [];
  const imageModel = (bytes: Uint8Array) =>
    new MockImageModelV4({
      doGenerate: async (options) => {
        prompts.push(options.prompt);
        return {
          images: [bytes],
          warnings: [],
          response: { timestamp: new Date(), modelId: "mock-image", headers: {} },
        };
      },
    });

  it("stores the image as an artifact of the turn and answers its id and download URL", async () => {
    const model = imageModel(png);
    const scope = scopeFor(["image-generation"]);
    const { tools } = await toolsFor(scope, { language: () => null, image: () => model });
    const out = await run<{ artifact_id: string; download_url: string; content_type: string }>(
      tools,
      "generate_image",
      { prompt: "A lighthouse at dusk, flat vector style" },
    );
    expect(out.download_url).toBe(`https://svc.example/v1/api/artifacts/${out.artifact_id}/download`);
    expect(out.content_type).toBe("image/png");
    expect(scope.artifactIds).toEqual([out.artifact_id]);
    expect(prompts).toEqual(["A lighthouse at dusk, flat vector style"]);
    const row = await env.DB.prepare("SELECT * FROM artifacts WHERE id = ?").bind(out.artifact_id).first();
    expect(row).toMatchObject({
      workspace_id: workspaceId,
      conversation_id: scope.conversationId,
      producer_user_id: userId,
      agent_id: "agent-test",
      name: "a-lighthouse-at-dusk-flat-vector-style.png",
      content_type: "image/png",
      source: "generate_image",
      size: png.byteLength,
    });
    const stored = await env.FILES.get(artifactKey(workspaceId, out.artifact_id));
    expect(new Uint8Array(await stored!.arrayBuffer())).toEqual(png);
  });

  it("works through the configured OpenAI-compatible image endpoint", async () => {
    const scope = scopeFor(["image-generation"], { LLM_BASE_URL: "https://llm.test/v1", IMAGE_MODEL: "img-1" });
    const { tools } = await skillToolProvider()(scope);
    const out = await run<{ artifact_id: string }>(tools, "generate_image", { prompt: "A red kite" });
    expect(scope.artifactIds).toEqual([out.artifact_id]);
  });

  it("fails clearly when the model fails or returns something that is not an image", async () => {
    const broken = new MockImageModelV4({
      doGenerate: async () => {
        throw new Error("provider down");
      },
    });
    const scope = scopeFor(["image-generation"]);
    const failing = await toolsFor(scope, { language: () => null, image: () => broken });
    expect(await fails(failing.tools, "generate_image", { prompt: "x" })).toBe(
      "The image model did not produce an image",
    );
    const text = await toolsFor(scope, {
      language: () => null,
      image: () => imageModel(new TextEncoder().encode("not an image")),
    });
    expect(await fails(text.tools, "generate_image", { prompt: "x" })).toMatch(/not a PNG, JPEG or WebP/);
    expect(scope.artifactIds).toEqual([]);
  });
});

describe("research", () => {
  const REPORT =
    "Tides come from the Moon's gravity, twice a day ([source](https://news.example/article)).\n\n## Findings\n\nSpring tides have the largest range.";

  it("searches, reads, then stores a Markdown report and answers its id, URL and summary", async () => {
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        const step = model.doGenerateCalls.length;
        if (step === 1) return toolCall("web_search", { query: "why tides" });
        if (step === 2) {
          const [found] = toolResults(options);
          const url = JSON.stringify(found?.output).includes("https://news.example/article")
            ? "https://news.example/article"
            : "https://nothing.example/";
          return toolCall("read_url", { url });
        }
        const read = JSON.stringify(toolResults(options).at(-1)?.output);
        return answer(read.includes("Spring tides: largest range") ? REPORT : "I found nothing.");
      },
    });
    const scope = scopeFor(["deep-research"], SEARCH);
    const { tools } = await toolsFor(scope, { language: () => model, image: () => null });
    const out = await run<{ artifact_id: string; download_url: string; summary: string }>(tools, "research", {
      question: "Why are there tides?",
    });
    expect(out).toEqual({
      artifact_id: scope.artifactIds[0],
      download_url: `https://svc.example/v1/api/artifacts/${scope.artifactIds[0]}/download`,
      summary: "Tides come from the Moon's gravity, twice a day ([source](https://news.example/article)).",
    });
    expect(model.doGenerateCalls).toHaveLength(3);
    expect((model.doGenerateCalls[0]!.tools ?? []).map((t) => t.name).sort()).toEqual(["read_url", "web_search"]);
    expect(searches.map((s) => s.q)).toEqual(["why tides"]);
    expect(await storedText(out.artifact_id)).toBe(`# Why are there tides?\n\n${REPORT}\n`);
    const row = await env.DB.prepare("SELECT name, content_type, source FROM artifacts WHERE id = ?")
      .bind(out.artifact_id)
      .first();
    expect(row).toEqual({
      name: "research-why-are-there-tides.md",
      content_type: "text/markdown; charset=utf-8",
      source: "research",
    });
  });

  it(`is bounded: after ${RESEARCH_STEPS - 1} tool steps the model must write, and pages it read are listed`, async () => {
    const model = new MockLanguageModelV4({
      doGenerate: async (options) =>
        options.tools?.length ? toolCall("read_url", { url: "https://news.example/no-main" }) : answer("Short answer."),
    });
    const scope = scopeFor(["deep-research"], SEARCH);
    const { tools } = await toolsFor(scope, { language: () => model, image: () => null });
    const out = await run<{ artifact_id: string; summary: string }>(tools, "research", { question: "Anything?" });
    expect(model.doGenerateCalls).toHaveLength(RESEARCH_STEPS);
    expect(model.doGenerateCalls.at(-1)!.tools ?? []).toEqual([]);
    expect(out.summary).toBe("Short answer.");
    expect(await storedText(out.artifact_id)).toBe(
      "# Anything?\n\nShort answer.\n\n## Pages read\n\n- [https://news.example/no-main](https://news.example/no-main)\n",
    );
  });

  it("fails clearly when the model fails or writes nothing, storing nothing", async () => {
    const scope = scopeFor(["deep-research"], SEARCH);
    const down = new MockLanguageModelV4({
      doGenerate: async () => {
        throw new Error("provider down");
      },
    });
    const failing = await toolsFor(scope, { language: () => down, image: () => null });
    expect(await fails(failing.tools, "research", { question: "q" })).toBe(
      "The research could not be completed: the model failed",
    );
    const silent = new MockLanguageModelV4({ doGenerate: async () => answer("  ") });
    const empty = await toolsFor(scope, { language: () => silent, image: () => null });
    expect(await fails(empty.tools, "research", { question: "q" })).toBe("The research produced no report");
    expect(scope.artifactIds).toEqual([]);
  });
});

describe("GET /v1/api/skills: availability", () => {
  const catalogue = async (vars: Record<string, string> | null) => {
    const res = vars
      ? await callWith(vars, "GET", "/v1/api/skills", { token: adminToken })
      : await call("GET", "/v1/api/skills", { token: adminToken });
    expect(res.status).toBe(200);
    const { skills } = await parse(res, SkillCatalogueSchema);
    return Object.fromEntries(skills.map((s) => [s.slug, s]));
  };

  it("marks skills whose configuration is missing as unavailable, with the reason", async () => {
    const bare = await catalogue(null);
    expect(bare["web-reader"]).toMatchObject({ available: true, unavailable_reason: null });
    expect(bare["document-reader"]).toMatchObject({
      available: true,
      unavailable_reason: null,
      // What read_document reads, no more (it reads no legacy .doc or .xls).
      description: "Reads text, CSV, HTML, PDF, Word (.docx) and Excel (.xlsx) files shared in a conversation.",
    });
    expect(bare["web-search"]).toMatchObject({
      available: false,
      unavailable_reason: "No web-search provider is configured (SEARCH_API_URL and SEARCH_API_KEY).",
    });
    expect(bare["image-generation"]!.available).toBe(false);
    expect(bare["deep-research"]!.unavailable_reason).toMatch(/No language model/);
    expect(bare["code-interpreter"]).toMatchObject({
      available: false,
      unavailable_reason: "Running code needs a sandbox this deployment does not have.",
    });
  });

  it("marks them available once configured; code-interpreter stays unavailable", async () => {
    const configured = await catalogue({
      ...SEARCH,
      LLM_BASE_URL: "https://llm.test/v1",
      LLM_MODEL: "m",
      IMAGE_MODEL: "img",
    });
    for (const slug of ["web-search", "web-reader", "document-reader", "image-generation", "deep-research"]) {
      expect(configured[slug], slug).toMatchObject({ available: true, unavailable_reason: null });
    }
    expect(configured["code-interpreter"]!.available).toBe(false);
  });

  it("answers availability on install and uninstall too", async () => {
    const res = await callWith(SEARCH, "PUT", "/v1/api/skills/web-search", { token: adminToken });
    expect(await res.json()).toMatchObject({ slug: "web-search", installed: true, available: true });
    const del = await call("DELETE", "/v1/api/skills/web-search", { token: adminToken });
    expect(await del.json()).toMatchObject({ installed: false, available: false });
  });
});
