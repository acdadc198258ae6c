#!/usr/bin/env node
// The example server and its user CLI, from the package build: `chat-gateway --help`.
import "../dist/bin/chat-gateway.js";
