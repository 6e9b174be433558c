// Prints the command, args and env an MCP bundle's server is started with, as
// Claude Desktop derives them: mcpb's own getMcpConfigForManifest substitutes
// ${__dirname}, ${HOME} and ${user_config.*} (defaults, then the values given).
//
//   node mcp-config.mjs <unpacked bundle dir> <home dir> < user-config.json
import { readFileSync } from "node:fs";
import { getMcpConfigForManifest } from "@anthropic-ai/mcpb";

const [dir, home] = process.argv.slice(2);
if (!dir || !home) {
  console.error("usage: node mcp-config.mjs <unpacked bundle dir> <home dir> < user-config.json");
  process.exit(2);
}
const manifest = JSON.parse(readFileSync(`${dir}/manifest.json`, "utf8"));
const userConfig = JSON.parse(readFileSync(0, "utf8"));
const config = await getMcpConfigForManifest({
  manifest,
  extensionPath: dir,
  systemDirs: { HOME: home },
  userConfig,
  pathSeparator: "/",
});
if (!config) {
  console.error("the bundle's required user_config is missing");
  process.exit(1);
}
process.stdout.write(JSON.stringify(config) + "\n");
