import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from "@noble/hashes/utils.js";
import { describe, expect, it } from "vitest";
import { sha256HexOfHexAndText, sha256HexOfText, sha256OfHexAndTextIs, sha256OfTextIs } from "../durable-objects/audit-log/sha256";

const subtleHex = async (bytes: Uint8Array) => bytesToHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));

/** Every length around the padding boundaries of one, two and three blocks, and a long one. */
const LENGTHS = [...Array.from({ length: 200 }, (_, i) => i), 247, 248, 255, 256, 1000, 5000];

const ascii = (n: number, seed: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(32 + ((i * 31 + seed) % 95))).join("");

describe("verification SHA-256", () => {
  it("matches the FIPS 180-4 test vectors", () => {
    expect(sha256HexOfText("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256HexOfText("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256HexOfText("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
  });

  it("agrees with WebCrypto on ASCII text of every length around the block boundaries", async () => {
    for (const n of LENGTHS) {
      const text = ascii(n, n);
      const expected = await subtleHex(utf8ToBytes(text));
      expect(sha256HexOfText(text), `length ${n}`).toBe(expected);
      expect(sha256OfTextIs(text, expected)).toBe(true);
    }
  });

  it("encodes text as UTF-8 the way the append side does, lone surrogates included", async () => {
    const samples = ["é", "naïve café", "日本語のテキスト", "emoji 🧪 and more 🧪🧪", "lone \ud800 high", "lone \udc00 low", "x".repeat(60) + "€".repeat(70), "\u0000\u001f\"\\"];
    for (const text of samples) {
      const expected = bytesToHex(sha256(utf8ToBytes(text)));
      expect(sha256HexOfText(text), JSON.stringify(text)).toBe(expected);
      expect(await subtleHex(utf8ToBytes(text))).toBe(expected);
    }
  });

  it("hashes salt bytes followed by text like the details digest of the append side", async () => {
    const salts = ["", "00", "0123456789abcdef0123456789abcdef", "0123456789ABCDEF0123456789ABCDEF", "ff".repeat(64)];
    for (const salt of salts) {
      for (const n of [0, 1, 30, 31, 32, 39, 40, 47, 48, 55, 56, 63, 64, 200, 3000]) {
        const text = `{"n":${n},"s":"${ascii(n, 7)}","u":"ü"}`;
        const expected = bytesToHex(sha256(concatBytes(hexToBytes(salt), utf8ToBytes(text))));
        expect(sha256HexOfHexAndText(salt, text), `salt ${salt.length}, text ${n}`).toBe(expected);
        expect(await subtleHex(concatBytes(hexToBytes(salt), utf8ToBytes(text)))).toBe(expected);
        expect(sha256OfHexAndTextIs(salt, text, expected)).toBe(true);
      }
    }
  });

  it("gives the same digests when long and short messages alternate (the buffer is reused and grows)", () => {
    const long = ascii(20_000, 3);
    const expectedLong = bytesToHex(sha256(utf8ToBytes(long)));
    const expectedShort = bytesToHex(sha256(concatBytes(hexToBytes("abcd"), utf8ToBytes("short"))));
    for (let i = 0; i < 3; i++) {
      expect(sha256HexOfHexAndText("abcd", "short")).toBe(expectedShort);
      expect(sha256HexOfText(long)).toBe(expectedLong);
    }
  });

  it("refuses a prefix that is not hex and any expected digest but the exact lowercase hex", () => {
    expect(sha256HexOfHexAndText("abc", "x")).toBeNull();
    expect(sha256HexOfHexAndText("zz", "x")).toBeNull();
    expect(sha256HexOfHexAndText("é0", "x")).toBeNull();
    expect(sha256OfHexAndTextIs("0g", "x", "0".repeat(64))).toBe(false);

    const expected = sha256HexOfText("abc");
    expect(sha256OfTextIs("abc", expected)).toBe(true);
    expect(sha256OfTextIs("abd", expected)).toBe(false);
    expect(sha256OfTextIs("abc", expected.toUpperCase())).toBe(false);
    expect(sha256OfTextIs("abc", expected.slice(0, 63))).toBe(false);
    expect(sha256OfTextIs("abc", `${expected}0`)).toBe(false);
    for (const i of [0, 7, 8, 31, 63]) {
      const flipped = expected.slice(0, i) + (expected[i] === "0" ? "1" : "0") + expected.slice(i + 1);
      expect(sha256OfTextIs("abc", flipped), `digit ${i}`).toBe(false);
    }
  });
});
