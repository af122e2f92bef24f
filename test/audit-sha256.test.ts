import { hash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { equalsHex, sha256, toHex } from "../durable-objects/audit-log/sha256";

const utf8 = new TextEncoder();

describe("the audit chain's SHA-256", () => {
  it("agrees with node:crypto's hash() as hex, whatever the input's length", () => {
    for (const text of ["", "abc", "x".repeat(55), "y".repeat(64), "ü".repeat(1000)]) {
      const bytes = utf8.encode(text);
      expect(toHex(sha256(bytes))).toBe(hash("sha256", bytes, "hex"));
    }
    // A digest of a buffer that is reused afterwards keeps its value.
    const buffer = utf8.encode("abc");
    const digest = sha256(buffer);
    buffer.fill(0);
    expect(toHex(digest)).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  it("compares a digest with stored hex exactly: lowercase, full length", () => {
    const digest = sha256(utf8.encode("abc"));
    const hex = toHex(digest);
    expect(equalsHex(digest, hex)).toBe(true);
    expect(equalsHex(digest, hex.toUpperCase())).toBe(false);
    expect(equalsHex(digest, hex.slice(0, -2))).toBe(false);
    expect(equalsHex(digest, `${hex.slice(0, -1)}c`)).toBe(false);
    expect(equalsHex(digest, `${hex.slice(0, -1)}g`)).toBe(false);
  });
});
