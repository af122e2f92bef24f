/**
 * @peculiar/x509, ready to use. Loaded with `import()` by the enrollment only: its decorators,
 * ASN.1 schemas and tsyringe container cost ~25 ms of CPU when the module runs, which every
 * cold start of the Worker would otherwise pay.
 */
// @peculiar/x509 resolves its services through tsyringe, which needs the Reflect metadata API.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(crypto);

export { x509 };
