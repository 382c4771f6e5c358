import { defineConfig } from "vitest/config";

// The app embeds ui/dist (tauri.conf.json: build.frontendDist). Tauri serves it from its own
// protocol, so asset paths are relative and no dev server is involved in the app build.
export default defineConfig({
  base: "./",
  clearScreen: false,
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "safari16",
  },
  test: {
    environment: "happy-dom",
  },
});
