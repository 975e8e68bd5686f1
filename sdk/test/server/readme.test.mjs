// Every TypeScript example of README.md, type-checked against the
// installed package's declarations and run, in the README's order, against
// the server: each block follows a line <!-- example: NAME [args=...]
// [stdin=code] --> that names its file, what it is given and whether it
// reads a mailed sign-in code.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { apiKey, baseUrl, corpus, emails, mailedCode, patience } from "./helpers.mjs";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const blocks = [...readme.matchAll(/(?:<!-- example: (\S+)([^>]*?)-->\n)?```ts\n([\s\S]*?)```/g)]
  .map(([, name, opts, code]) => ({ name, opts: Object.fromEntries([...(opts ?? "").matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]])), code }));

test("every TypeScript block of the README is a named example", () => {
  assert.ok(blocks.length >= 7);
  assert.deepEqual(blocks.filter((b) => !b.name).map((b) => b.code.slice(0, 60)), []);
});

test("the README's examples compile and run against the server", { timeout: 3 * patience }, async (t) => {
  const dir = join(process.cwd(), "examples");
  mkdirSync(dir, { recursive: true });
  for (const b of blocks) writeFileSync(join(dir, b.name), b.code);
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
    compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", strict: true,
      noUncheckedIndexedAccess: true, types: ["node"], outDir: "dist" },
    include: ["*.ts"],
  }));
  execFileSync(process.execPath, [join(process.cwd(), "node_modules/typescript/bin/tsc"), "-p", dir], { stdio: "inherit" });

  const folder = mkdtempSync(join(tmpdir(), "kilo-readme-"));
  for (const f of ["wood.jpg", "dune.jpg", "storm.jpg", "blinds.jpg"]) copyFileSync(join(corpus, "photos", f), join(folder, f));
  const given = { folder };
  const env = { ...process.env, KILO_URL: baseUrl, KILO_API_KEY: apiKey, KILO_EMAIL: emails[2] };
  const outputs = {};
  for (const b of blocks) {
    await t.test(b.name, async () => {
      const args = b.opts.args ? [given[b.opts.args]] : [];
      assert.ok(args.every(Boolean), `${b.name} needs a ${b.opts.args}`);
      const out = await runExample(join(dir, "dist", b.name.replace(/\.ts$/, ".js")), args, env,
        b.opts.stdin === "code" ? () => mailedCode(env.KILO_EMAIL) : undefined);
      outputs[b.name] = out;
      const ids = /project ([0-9a-f-]{36}), batches ([0-9a-f-]{36})/.exec(out);
      if (ids) Object.assign(given, { project: ids[1], batch: ids[2] });
    });
  }
  assert.match(outputs["with-key.ts"], /^\d+ projects$/m);
  assert.match(outputs["with-code.ts"], /Signed in as cai\n\d+ projects/);
  assert.match(outputs["errors.ts"], /^404 not_found: .+ \(request \S+\)$/m);
  assert.match(outputs["upload.ts"], /^4\/4 files, /m);
  assert.doesNotMatch(outputs["upload.ts"], /failed at/);
  assert.match(outputs["follow.ts"], /^batch completed: 4 done, 0 failed$/m);
  assert.match(outputs["cull.ts"], /^4 photos culled\n[1-4] picks, 1 labelled red$/m);
  assert.match(outputs["gallery.ts"], /\/s\/[a-z2-7]{10} \(password harbour-2026, [1-4] photos\)\n[1-4] photos shown/);
  assert.match(outputs["export.ts"], /^contact-sheet\.pdf, \d+ bytes$/m);
  assert.equal(readFileSync("contact-sheet.pdf").subarray(0, 5).toString(), "%PDF-");
});

// runExample runs one compiled example and answers its output; stdin,
// when given, is what to type once the program has started.
function runExample(file, args, env, stdin) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file, ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
    let out = "", err = "";
    child.stdout.on("data", (d) => { out += d; });
    child.stderr.on("data", (d) => { err += d; });
    const timer = setTimeout(() => child.kill(), patience);
    if (stdin) stdin().then((text) => child.stdin.end(text + "\n"), reject);
    else child.stdin.end();
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${file} exited ${code}\n${out}\n${err}`));
    });
  });
}
