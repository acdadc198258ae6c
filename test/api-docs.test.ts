// The API reference (`npm run docs`) names each module by the import path a user writes, so a
// reader can copy it: `chat-gateway/storage/memory`, not the source folder it is built from.
import { expect, it } from "vitest";
import { Application } from "typedoc";
import { entrypoints } from "../entrypoints.mjs";

it("api docs - every module is named by its import path", async () => {
  const app = await Application.bootstrapWithPlugins({ options: "typedoc.json" } as never);
  const project = await app.convert();
  const names = (project?.children ?? []).map((c) => c.name).sort();
  const imports = entrypoints
    .map((e) => (e.subpath === "." ? "chat-gateway" : `chat-gateway/${e.subpath.slice(2)}`))
    .sort();
  expect(names).toEqual(imports);
}, 120_000);
