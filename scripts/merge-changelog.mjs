// Folds the changelog.d/*.md fragments (written by parallel work) into CHANGELOG.md under
// "Unreleased", grouped by their "### Added / Changed / Fixed" headings, then removes them.
import { readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";

const order = ["core.md", "storage.md", "login.md", "push-media.md", "runtimes.md", "client-web.md", "multiprocess.md", "bench.md"];
const files = readdirSync("changelog.d").filter((f) => f.endsWith(".md") && f !== "README.md");
files.sort((a, b) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99));
const groups = new Map();
for (const file of files) {
  let heading = "Added";
  for (const line of readFileSync(`changelog.d/${file}`, "utf8").split("\n")) {
    const h = /^###\s+(\w+)/.exec(line);
    if (h) heading = h[1];
    else if (line.startsWith("- ")) groups.set(heading, [...(groups.get(heading) ?? []), line]);
  }
}
const sections = ["Added", "Changed", "Fixed", "Removed"].filter((g) => groups.has(g)).map((g) => `### ${g}\n${groups.get(g).join("\n")}\n`);
const header = `# Changelog\n\nAll notable changes to this project are documented here. The format follows\n[Keep a Changelog](https://keepachangelog.com/en/1.1.0/), and the project uses\n[Semantic Versioning](https://semver.org/spec/v2.0.0.html).\n\n## [Unreleased]\n\n`;
const previous = existsSync("CHANGELOG.md") ? readFileSync("CHANGELOG.md", "utf8") : "";
const rest = previous.includes("\n## [0") ? previous.slice(previous.indexOf("\n## [0")) : "";
writeFileSync("CHANGELOG.md", header + sections.join("\n") + rest);
for (const file of files) rmSync(`changelog.d/${file}`);
console.log(`merged ${files.length} fragments into CHANGELOG.md`);
