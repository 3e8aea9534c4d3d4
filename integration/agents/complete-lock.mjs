// Completes package-lock.json with the optional platform packages that the
// registry this project installs from does not serve (for example
// opencode-darwin-arm64): npm leaves them out of a lock it writes, and
// `npm ci` then refuses the lock as out of sync. Each missing optional
// dependency gets an entry with its exact version and the os/cpu/libc its
// name says, so that npm ci skips it on other platforms as it would with a
// complete lock.
//
// Regenerate the lock after changing package.json:
//
//	npm install --package-lock-only --ignore-scripts && node complete-lock.mjs
import { readFileSync, writeFileSync } from "node:fs";

const file = new URL("./package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(file, "utf8"));
const pkgs = lock.packages;
const added = [];
for (const [path, info] of Object.entries(pkgs)) {
  for (const [dep, spec] of Object.entries(info.optionalDependencies ?? {})) {
    const top = `node_modules/${dep}`;
    const nested = path ? `${path}/node_modules/${dep}` : top;
    if (pkgs[top] || pkgs[nested]) continue;
    if (!/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(spec)) {
      console.error(`complete-lock: ${dep}@${spec} is not an exact version; left out`);
      continue;
    }
    const name = dep.split("/").pop();
    const entry = { version: spec, optional: true };
    const cpu = ["arm64", "x64", "arm"].find((c) => new RegExp(`(^|-)${c}($|-)`).test(name));
    if (cpu) entry.cpu = [cpu];
    const os = [["darwin", "darwin"], ["linux", "linux"], ["win32", "win32"], ["windows", "win32"]].find(([k]) => name.includes(k));
    if (os) entry.os = [os[1]];
    if (name.includes("musl")) entry.libc = ["musl"];
    else if (os && os[1] === "linux") entry.libc = ["glibc"];
    pkgs[top] = entry;
    added.push(top);
  }
}
lock.packages = Object.fromEntries(
  Object.entries(pkgs).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0)),
);
writeFileSync(file, JSON.stringify(lock, null, 2) + "\n");
console.log(`complete-lock: ${added.length} entries added${added.length ? ": " + added.join(", ") : ""}`);
