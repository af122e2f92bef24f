import { bytesToHex } from "@noble/hashes/utils.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { hmacSha256 } from "../src/platform/crypto";
import { htmlToText } from "../src/platform/html";
import { logError, logWarning } from "../src/platform/log";

describe("platform helpers", () => {
  afterEach(() => vi.restoreAllMocks());

  it("hmacSha256 matches RFC 4231 test case 2", () => {
    expect(bytesToHex(hmacSha256("Jefe", "what do ya want for nothing?"))).toBe(
      "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    );
  });

  it("logError writes one JSON line with level, msg, the fields and the error as text", () => {
    const spy = vi.spyOn(console, "error").mockImplementation(() => {});
    logError("thing failed", new Error("boom"), { workspace_id: "w1" });
    logError("no cause");
    expect(spy.mock.calls.map(([line]) => JSON.parse(line as string))).toEqual([
      { level: "error", msg: "thing failed", workspace_id: "w1", error: "Error: boom" },
      { level: "error", msg: "no cause" },
    ]);
  });

  it("logWarning writes the same line at level warn", () => {
    const spy = vi.spyOn(console, "warn").mockImplementation(() => {});
    logWarning("worked around", "why");
    expect(JSON.parse(spy.mock.calls[0]![0] as string)).toEqual({ level: "warn", msg: "worked around", error: "why" });
  });

  it("htmlToText drops tags, scripts and styles, keeps inline words whole and decodes references", () => {
    expect(htmlToText("The <strong>Moon</strong>&#39;s pull")).toBe("The Moon's pull");
    expect(htmlToText("<b>Cloud</b>flare")).toBe("Cloudflare");
    expect(htmlToText("<p>Hello</p><p>world</p><br>again")).toBe("Hello world again");
    expect(htmlToText("<style>p{color:red}</style><script>alert(1)</script>Hi &amp; bye")).toBe("Hi & bye");
  });
});
