// docs/PROTOCOL.md is the protocol reference users read: it must list every frame the gateway
// accepts (from the client frame structs) and sends (from the gateway frame structs of
// chat-gateway/protocol, the list the sending code is typed against), each with its payload's
// fields, and every section a shipped comment cites must exist.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  clientFrameStructs,
  parseClientFrame,
  SERVER_FRAME_TYPES,
  STORED_FRAME_TYPES,
  type ServerFrameType,
  GatewayError,
} from "chat-gateway/protocol";
import type { ServerFrameType as ClientSideServerFrameType } from "chat-gateway/protocol";
import { serverFrameStructs } from "chat-gateway/protocol";

const root = fileURLToPath(new URL("..", import.meta.url));
const doc = readFileSync(join(root, "docs/PROTOCOL.md"), "utf8");
const lines = doc.split("\n");

// The client's frame types and the gateway's list are the same set (checked by `tsc`).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const clientKnowsEveryFrame: Same<ClientSideServerFrameType, ServerFrameType> = true;

interface Section {
  number: string;
  title: string;
  body: string;
}

/** Numbered headings (`## 4. Messages`, `### 8.3 Limits`) with the text up to the next heading. */
function sections(): Section[] {
  const found: Section[] = [];
  let current: Section | undefined;
  for (const line of lines) {
    const heading = /^#{2,6} *(?:§ *)?(\d+(?:\.\d+)*)[.)]? +(.*)$/.exec(line);
    if (heading) {
      current = { number: heading[1]!, title: heading[2]!, body: "" };
      found.push(current);
    } else if (/^#{2,6} /.test(line)) {
      current = undefined;
    } else if (current) {
      current.body += `${line}\n`;
    }
  }
  return found;
}

const bySection = new Map(sections().map((s) => [s.number, s]));

function section(number: string): Section {
  const found = bySection.get(number);
  if (!found) throw new Error(`docs/PROTOCOL.md has no section ${number}`);
  return found;
}

/** A section with its subsections (§4 = 4, 4.1, 4.2, …). */
function sectionText(number: string): string {
  return sections()
    .filter((s) => s.number === number || s.number.startsWith(`${number}.`))
    .map((s) => s.body)
    .join("\n");
}

/** The rows of the Markdown tables of a section whose first cell is a frame type in backticks. */
function frameRows(number: string): Array<{ type: string; cells: string[] }> {
  return section(number)
    .body.split("\n")
    .filter((line) => line.startsWith("| `"))
    .map((line) => {
      const cells = line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim());
      return { type: /^`([^`]+)`/.exec(cells[0]!)![1]!, cells };
    });
}

function fieldsOf(struct: unknown): string[] {
  return Object.keys((struct as { schema: Record<string, unknown> }).schema);
}

function shippedFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === "dist") continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...shippedFiles(path));
    else if (/\.(ts|mts|mjs|js|html)$/.test(name)) out.push(path);
  }
  return out;
}

const shipped = ["src", "adapters", "examples"].flatMap((dir) => shippedFiles(join(root, dir)));

describe("docs/PROTOCOL.md", () => {
  it("numbers its sections 1, 2, 3, … and each subsection under its section, in order", () => {
    const all = sections();
    const top = all.filter((s) => !s.number.includes("."));
    expect(top.length).toBeGreaterThanOrEqual(12);
    expect(top.map((s) => s.number)).toEqual(top.map((_, i) => String(i + 1)));
    let parent = "0";
    let sub = 0;
    for (const s of all) {
      if (!s.number.includes(".")) {
        parent = s.number;
        sub = 0;
        continue;
      }
      sub++;
      expect(s.number, `heading "${s.title}"`).toBe(`${parent}.${sub}`);
    }
    // The numbers code comments rely on.
    expect(section("1").title).toMatch(/^Transport/);
    expect(section("8").title).toMatch(/^Errors/);
    expect(section("9").title).toMatch(/^HTTP API/);
    expect(section("10").title).toMatch(/^The example server/);
  });

  it("lists every frame the gateway accepts, with every field of its payload", () => {
    expect(clientKnowsEveryFrame).toBe(true);
    const rows = frameRows("1.1");
    const accepted = Object.keys(clientFrameStructs);
    expect(rows.map((r) => r.type).sort()).toEqual([...accepted].sort());
    for (const row of rows) {
      const struct = clientFrameStructs[row.type as keyof typeof clientFrameStructs];
      for (const field of fieldsOf(struct)) {
        expect(row.cells[1], `field "${field}" of ${row.type}`).toMatch(new RegExp(`\\b${field}\\b`));
      }
    }
  });

  it("lists every frame the gateway sends, and which ones it stores", () => {
    const rows = frameRows("1.2");
    expect(rows.map((r) => r.type).sort()).toEqual([...SERVER_FRAME_TYPES].sort());
    // A payload written out as `{…}` names every field of its struct, and no other.
    const spelledOut = rows.filter((r) => r.cells[1]!.startsWith("`{"));
    expect(spelledOut.length).toBeGreaterThan(15);
    for (const row of spelledOut) {
      const named = [...row.cells[1]!.matchAll(/([a-z_]+)\??/g)].map((m) => m[1]);
      expect(named.sort(), `payload of ${row.type}`).toEqual(
        fieldsOf(serverFrameStructs[row.type as ServerFrameType]).sort(),
      );
    }
    const stored = rows.filter((r) => r.cells[2] === "yes").map((r) => r.type);
    expect(stored.sort()).toEqual([...STORED_FRAME_TYPES].sort());
    expect(rows.every((r) => r.cells[2] === "yes" || r.cells[2] === "no")).toBe(true);
  });

  it("states the outbox list of §5 as the gateway stores it", () => {
    const text = sectionText("5").replace(/\s+/g, " ");
    const list = /Stored \(with `seq`\):(.*?)Every other frame/.exec(text);
    expect(list).not.toBeNull();
    const named = [...list![1]!.matchAll(/`([a-z.]+)`/g)].map((m) => m[1]);
    expect(named.filter((t) => t !== "seq").sort()).toEqual([...STORED_FRAME_TYPES].sort());
  });

  it("describes each frame in the section its index row names", () => {
    for (const row of [...frameRows("1.1"), ...frameRows("1.2")]) {
      const number = row.cells[row.cells.length - 1]!;
      expect(sectionText(number), `${row.type} in §${number}`).toContain(`\`${row.type}`);
    }
  });

  it("describes the seed's once-planned frames in §11, and the gateway now accepts them", () => {
    const asks = sectionText("11");
    for (const type of [
      "picker.select",
      "commands.complete",
      "picker.approval",
      "picker.confirm",
      "picker.model",
      "picker.resolved",
    ]) {
      expect(asks).toContain(`\`${type}`);
    }
    expect(
      parseClientFrame(JSON.stringify({ type: "picker.select", payload: { picker_id: "p1", option_id: "approve" } }))
        .type,
    ).toBe("picker.select");
    expect(
      parseClientFrame(JSON.stringify({ type: "commands.complete", payload: { chat_id: "default", text: "/mo" } }))
        .type,
    ).toBe("commands.complete");
    expect(() => parseClientFrame(JSON.stringify({ type: "picker.select", payload: {} }))).toThrow(GatewayError);
  });

  it("refers only to its own sections that exist", () => {
    const refs = [...doc.matchAll(/§ *(\d+(?:\.\d+)*)/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(20);
    for (const ref of refs) expect(bySection.has(ref), `§${ref}`).toBe(true);
  });
});

describe("code comments that cite docs/PROTOCOL.md", () => {
  it("cite sections that exist, always as docs/PROTOCOL.md §N", () => {
    const cited: string[] = [];
    for (const file of shipped) {
      const text = readFileSync(file, "utf8");
      const where = relative(root, file);
      // PROTOCOL_VERSION and friends are identifiers; every other mention is a citation.
      for (const m of text.matchAll(/(\S*)PROTOCOL(?![_A-Z])(\S*)/g)) {
        expect(`${m[1]}PROTOCOL${m[2]}`, where).toMatch(/^[`(]?docs\/PROTOCOL\.md\b/);
      }
      for (const m of text.matchAll(/§ *(\d+(?:\.\d+)*)/g)) {
        const before = text.slice(Math.max(0, m.index! - 40), m.index);
        expect(before, `${where}: §${m[1]} without docs/PROTOCOL.md`).toMatch(/docs\/PROTOCOL\.md[^\n]*$/);
        expect(bySection.has(m[1]!), `${where} cites §${m[1]}`).toBe(true);
        cited.push(m[1]!);
      }
    }
    expect(cited.length).toBeGreaterThan(20);
  });

  it("never point users at documents they do not have", () => {
    for (const file of shipped) {
      const text = readFileSync(file, "utf8");
      const where = relative(root, file);
      expect(text, where).not.toMatch(/\.\.\/shared|\bseeds?\b|issue #\d/i);
    }
  });
});
