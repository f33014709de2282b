"""One tool call written in other formats: OpenAI's and Anthropic's APIs, and OpenAI's token estimate."""
