/**
 * The reference connector CLI against `wrangler dev`: an admin creates a connector, the CLI
 * redeems its token (from the environment, never the command line) and writes a key and a
 * certificate that chains to the workspace CA.
 */
import "reflect-metadata";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import * as x509 from "@peculiar/x509";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, signupToken, startDevServer } from "./server";

const ROOT = path.resolve(import.meta.dirname, "../..");
const PORT = Number(process.env.E2E_CONNECTOR_PORT ?? 8798);
const EC = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
x509.cryptoProvider.set(globalThis.crypto);

let dev: DevServer;
let caCert: x509.X509Certificate;

const pem = (label: string, der: ArrayBuffer) =>
  `-----BEGIN ${label}-----\n${Buffer.from(der)
    .toString("base64")
    .match(/.{1,64}/g)!
    .join("\n")}\n-----END ${label}-----\n`;

beforeAll(async () => {
  const keys = (await crypto.subtle.generateKey(EC, true, ["sign", "verify"])) as CryptoKeyPair;
  caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "CN=E2E Workspace CA",
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    keys,
    signingAlgorithm: EC,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
  });
  dev = await startDevServer(PORT, {
    CONNECTOR_CA_CERT_PEM: caCert.toString("pem"),
    CONNECTOR_CA_KEY_PEM: pem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", keys.privateKey)),
    CONNECTOR_TUNNEL_ADDR: "tunnel.e2e.test:443",
  });
}, 150_000);

afterAll(async () => {
  await dev?.stop();
});

describe("tools/connector/enroll.mjs", () => {
  it("enrolls a connector and writes key.pem, cert.pem and ca.pem", async () => {
    const token = await signupToken(dev.origin, "Conn Co");
    const created = await fetch(`${dev.origin}/v1/mcp/connectors`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "Office" }),
    });
    expect(created.status).toBe(201);
    const { connector_id, enrollment_token } = (await created.json()) as {
      connector_id: string;
      enrollment_token: string;
    };

    const out = mkdtempSync(path.join(tmpdir(), "svc-connector-"));
    const run = spawnSync(process.execPath, ["tools/connector/enroll.mjs", "--url", dev.origin, "--out", out], {
      cwd: ROOT,
      env: { ...process.env, SVC_ENROLL_TOKEN: enrollment_token },
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    const printed = JSON.parse(run.stdout) as { connector_id: string; subject: string; tunnel_addr: string };
    expect(printed).toMatchObject({ connector_id, subject: `CN=${connector_id}`, tunnel_addr: "tunnel.e2e.test:443" });
    const cert = new x509.X509Certificate(readFileSync(path.join(out, "cert.pem"), "utf8"));
    expect(await cert.verify({ publicKey: caCert.publicKey, signatureOnly: true })).toBe(true);
    expect(readFileSync(path.join(out, "key.pem"), "utf8")).toContain("BEGIN PRIVATE KEY");
    expect(new x509.X509Certificate(readFileSync(path.join(out, "ca.pem"), "utf8")).equal(caCert)).toBe(true);

    const again = spawnSync(process.execPath, ["tools/connector/enroll.mjs", "--url", dev.origin, "--out", out], {
      cwd: ROOT,
      env: { ...process.env, SVC_ENROLL_TOKEN: enrollment_token },
      encoding: "utf8",
    });
    expect(again.status).toBe(1);
    expect(again.stderr).toContain("403");
  }, 60_000);
});

describe("tools/connector/enroll.mjs --help", () => {
  const enroll = (args: string[]) =>
    spawnSync(process.execPath, ["tools/connector/enroll.mjs", ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "" },
      encoding: "utf8",
    });

  it("answers --help and -h with the usage on stdout, exit 0, and makes no key or request", () => {
    for (const flag of ["--help", "-h"]) {
      const run = enroll([flag]);
      expect(run.status).toBe(0);
      expect(run.stdout).toMatch(/^usage: SVC_ENROLL_TOKEN=svc_enroll_\.\.\. node tools\/connector\/enroll\.mjs --url/);
      expect(run.stdout).toContain("--out <dir>");
      expect(run.stderr).toBe("");
    }
  });

  it("refuses an unknown option or a stray argument with the usage (exit 2), never repeating the argument", () => {
    for (const args of [["--bogus"], ["svc_enroll_stray"]]) {
      const run = enroll(args);
      expect(run.status).toBe(2);
      expect(run.stderr).toContain("usage: SVC_ENROLL_TOKEN=");
      expect(run.stderr).not.toContain("svc_enroll_stray");
    }
  });
});
