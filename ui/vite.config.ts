import { svelte } from "@sveltejs/vite-plugin-svelte";
import { svelteTesting } from "@testing-library/svelte/vite";
import { defineConfig } from "vitest/config";

// The app embeds ui/dist (tauri.conf.json: build.frontendDist). Tauri serves it from its own
// protocol, so asset paths are relative and no dev server is involved in the app build.
export default defineConfig({
  base: "./",
  clearScreen: false,
  plugins: [svelte(), svelteTesting()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "safari16",
  },
  test: {
    environment: "happy-dom",
    // Longer waits than vitest's defaults (5 s a test, 1 s a `vi.waitFor`): a loaded CI machine
    // once took longer (src/test-setup.ts).
    setupFiles: ["src/test-setup.ts"],
    testTimeout: 30_000,
  },
});
