// Certificates made with openssl for the TLS tests: two CAs, server and client certificates.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** PEM files in one temporary directory; `remove()` deletes it. */
export interface Pki {
  dir: string;
  /** The PEM text of a file made here. */
  pem(name: string): Buffer;
  remove(): void;
}

function openssl(dir: string, args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
}

/** A CA `name` (name.crt, name.key). */
function ca(dir: string, name: string): void {
  openssl(dir, [
    ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
    ...["-keyout", `${name}.key`, "-out", `${name}.crt`, "-days", "2", "-subj", `/CN=${name}`],
    ...["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign"],
  ]);
}

/** A leaf `name` signed by CA `by`, with subjectAltName `san`. */
function leaf(dir: string, name: string, by: string, san: string, usage: string): void {
  openssl(dir, [
    ...["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
    ...["-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`],
  ]);
  writeFileSync(
    join(dir, `${name}.ext`),
    `subjectAltName=${san}\nextendedKeyUsage=${usage}\nbasicConstraints=CA:FALSE\n`,
  );
  openssl(dir, [
    ...["x509", "-req", "-in", `${name}.csr`, "-CA", `${by}.crt`, "-CAkey", `${by}.key`],
    ...["-CAcreateserial", "-out", `${name}.crt`, "-days", "2", "-extfile", `${name}.ext`],
  ]);
}

/**
 * ca1 signs server-a, server-b (127.0.0.1) and client (DNS:scraper.example); ca2 signs
 * stranger (a client certificate from another CA, same SAN).
 */
export function makePki(): Pki {
  const dir = mkdtempSync(join(tmpdir(), "web-config-pki-"));
  ca(dir, "ca1");
  ca(dir, "ca2");
  for (const server of ["server-a", "server-b"])
    leaf(dir, server, "ca1", "IP:127.0.0.1,DNS:localhost", "serverAuth");
  leaf(dir, "client", "ca1", "DNS:scraper.example", "clientAuth");
  leaf(dir, "other-san", "ca1", "DNS:intruder.example", "clientAuth");
  leaf(dir, "stranger", "ca2", "DNS:scraper.example", "clientAuth");
  return {
    dir,
    pem: (name) => readFileSync(join(dir, name)),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
