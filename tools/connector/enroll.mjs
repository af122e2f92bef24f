#!/usr/bin/env node
// Reference connector enrollment: makes a P-256 key and a CSR, redeems the one-time token at
// POST /v1/mcp/connectors/enroll, writes key.pem, cert.pem and ca.pem, and checks that the
// certificate chains to the CA.
//
//   node tools/connector/enroll.mjs --url https://svc.example.com --token svc_enroll_… [--out DIR]
//   SVC_ENROLL_TOKEN=svc_enroll_… node tools/connector/enroll.mjs --url … [--out DIR]
//   node tools/connector/enroll.mjs --url … --token-file ./token.txt
//
// The token is single-use and expires 15 minutes after the admin created it.
import "reflect-metadata";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(globalThis.crypto);
const EC = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };

const USAGE = `usage: SVC_ENROLL_TOKEN=svc_enroll_... node tools/connector/enroll.mjs --url <service origin> [--out DIR]
   or: node tools/connector/enroll.mjs --url <service origin> (--token-file <file> | --token <token>) [--out DIR]

Redeems a connector's one-time enrollment token (15 minutes, once) for a client certificate:
makes a P-256 key and a CSR, and writes key.pem (never sent), cert.pem and ca.pem into DIR.

  --url <origin>       the service, e.g. http://localhost:8787
  --token-file <file>  a file holding the token (or set SVC_ENROLL_TOKEN)
  --token <token>      the token itself (kept in shell history: prefer the two above)
  --out <dir>          where to write the files (default: the current folder)
  --name <cn>          the CSR's common name (default: connector; the certificate names the connector id)
  -h, --help           this text
`;

let values;
try {
  ({ values } = parseArgs({
    options: {
      url: { type: "string" },
      token: { type: "string" },
      "token-file": { type: "string" },
      out: { type: "string", default: "." },
      name: { type: "string", default: "connector" },
      help: { type: "boolean", short: "h" },
    },
  }));
} catch (e) {
  // Only the kind of mistake: a stray argument may be the token itself.
  console.error(`${e.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" ? "unknown option" : "bad arguments"}\n${USAGE}`);
  process.exit(2);
}
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const token =
  values.token ??
  (values["token-file"] ? readFileSync(values["token-file"], "utf8").trim() : process.env.SVC_ENROLL_TOKEN);
if (!values.url || !token) {
  console.error(USAGE);
  process.exit(2);
}

const pem = (label, der) =>
  `-----BEGIN ${label}-----\n${Buffer.from(der)
    .toString("base64")
    .match(/.{1,64}/g)
    .join("\n")}\n-----END ${label}-----\n`;

const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]);
const csr = await x509.Pkcs10CertificateRequestGenerator.create({
  name: `CN=${values.name}`,
  keys,
  signingAlgorithm: EC,
});

const res = await fetch(new URL("/v1/mcp/connectors/enroll", values.url), {
  method: "POST",
  headers: { "Content-Type": "application/json" },
  body: JSON.stringify({ csr_pem: csr.toString("pem"), token }),
});
const body = await res.json().catch(() => ({}));
if (res.status !== 200) {
  console.error(`enrollment refused: ${res.status} ${body.code ?? ""} ${body.detail ?? ""}`.trim());
  process.exit(1);
}

const cert = new x509.X509Certificate(body.cert_pem);
const ca = new x509.X509Certificate(body.ca_pem);
const chained = await cert.verify({ publicKey: ca.publicKey, signatureOnly: true });
const now = new Date();
if (!chained || cert.notBefore > now || cert.notAfter < now) {
  console.error("the issued certificate does not verify against the CA it came with");
  process.exit(1);
}

mkdirSync(values.out, { recursive: true });
writeFileSync(
  path.join(values.out, "key.pem"),
  pem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", keys.privateKey)),
  {
    mode: 0o600,
  },
);
writeFileSync(path.join(values.out, "cert.pem"), body.cert_pem);
writeFileSync(path.join(values.out, "ca.pem"), body.ca_pem);
console.log(
  JSON.stringify({
    connector_id: body.connector_id,
    subject: cert.subject,
    serial: cert.serialNumber,
    not_after: cert.notAfter.toISOString(),
    tunnel_addr: body.tunnel_addr,
    tunnel_server_name: body.tunnel_server_name,
    files: ["key.pem", "cert.pem", "ca.pem"].map((f) => path.join(values.out, f)),
  }),
);
