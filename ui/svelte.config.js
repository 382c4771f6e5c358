// Svelte's compiler options for Vite, svelte-check and the ESLint parser: TypeScript in
// `<script lang="ts">` is stripped by Vite's preprocessor; runes mode everywhere.
import { vitePreprocess } from "@sveltejs/vite-plugin-svelte";

export default {
  preprocess: vitePreprocess(),
  compilerOptions: { runes: true },
};
