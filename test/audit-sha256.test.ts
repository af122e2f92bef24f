import { hash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { sha256, sha256Words, toHex, wordsEqualHex } from "../durable-objects/audit-log/sha256";

const utf8 = new TextEncoder();

describe("the audit chain's SHA-256", () => {
  it("gives FIPS 180-4's known answers", () => {
    // FIPS 180-4 / NIST CSHS examples: "abc", the 448-bit two-block message, one million "a".
    expect(toHex(sha256(utf8.encode("")))).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(toHex(sha256(utf8.encode("abc")))).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(toHex(sha256(utf8.encode("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")))).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
    expect(toHex(sha256(utf8.encode("a".repeat(1_000_000))))).toBe(
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
    );
  });

  it("agrees with node:crypto's hash() as hex for every length across the padding boundaries", () => {
    const bytes = new Uint8Array(300);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 131 + 7) & 0xff;
    for (let n = 0; n <= bytes.length; n++) {
      const message = bytes.subarray(0, n);
      expect(toHex(sha256(message)), `length ${n}`).toBe(hash("sha256", message, "hex"));
    }
    for (const text of ["", "abc", "x".repeat(55), "y".repeat(64), "ü".repeat(1000)]) {
      const message = utf8.encode(text);
      expect(toHex(sha256(message))).toBe(hash("sha256", message, "hex"));
    }
    // A digest of a buffer that is reused afterwards keeps its value.
    const buffer = utf8.encode("abc");
    const digest = sha256(buffer);
    buffer.fill(0);
    expect(toHex(digest)).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  it("compares a digest's words with stored hex exactly: lowercase, full length", () => {
    const hex = hash("sha256", "abc", "hex");
    expect(wordsEqualHex(sha256Words(utf8.encode("abc")), hex)).toBe(true);
    expect(wordsEqualHex(sha256Words(utf8.encode("abc")), hex.toUpperCase())).toBe(false);
    expect(wordsEqualHex(sha256Words(utf8.encode("abc")), hex.slice(0, -2))).toBe(false);
    expect(wordsEqualHex(sha256Words(utf8.encode("abc")), `${hex.slice(0, -1)}c`)).toBe(false);
    expect(wordsEqualHex(sha256Words(utf8.encode("abc")), `${hex.slice(0, -1)}g`)).toBe(false);
    expect(wordsEqualHex(sha256Words(utf8.encode("abd")), hex)).toBe(false);
  });
});
