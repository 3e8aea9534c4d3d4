package gateway

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// fetchedURL is content of the agent's request that the provider would
// fetch by URL for it: where it is (a JSON path) and the URL.
type fetchedURL struct {
	Where, URL string
}

// Where the providers read content by URL: an Anthropic image or document
// source's "url", Chat Completions' image_url.url (and the audio_url,
// video_url of compatible servers), Responses' input_image "image_url" and
// input_file "file_url", Gemini's fileData "fileUri" (keys in lower case).
var urlKeys = []string{"url", "image_url", "file_url", "fileuri", "file_uri"}

// Top-level members the URL walk does not look into: the tool list (its
// network tools are left out whole; its schemas are not content), the
// output's format (schemas again) and metadata, none of which a provider
// fetches from.
var notContent = []string{"tools", "tool_choice", "text", "response_format", "output_format", "output_config",
	"generationconfig", "generation_config", "metadata"}

// Words of the keys under which a compatible server may take a URL for
// content to fetch: vLLM's plain audio_url and video_url, Mistral's
// document_url, OpenRouter's file_data, LiteLLM's file_id, DashScope's
// input_audio data and video frame list. Under a key with one of them
// among its words (mediaKey), a value that reads as a URL (remoteURL) is
// taken for one; under others (a message's text, a command's words, a
// tool's stdout, "metadata", a "filename") it is words.
var mediaKeyWords = []string{"url", "uri", "file", "image", "audio", "video", "document", "data", "media", "attachment"}

// Members whose values a provider never fetches from, wherever they are:
// a model's function call (its arguments are the model's own output),
// and the citations or annotations of an earlier answer.
var neverFetched = []string{"functioncall", "function_call", "citations", "annotations"}

// urlFetched is the first content of the request's members ms that the
// provider would fetch by URL, or nil: a URL other than a data: URL under
// one of urlKeys, or a value that reads as a URL under a key that names
// content (mediaKey; an element of a list is under the list's key),
// anywhere in the request but in notContent's members, the model's own
// tool calls (an Anthropic tool_use, a Responses *_call item, a Gemini
// functionCall), a Gemini function response's own response object, and
// citations. Every occurrence of a duplicated key is looked at, in any
// letter case.
func urlFetched(ms []member) *fetchedURL {
	for _, m := range ms {
		if slices.Contains(notContent, strings.ToLower(m.key)) {
			continue
		}
		found, ok := scanURLs(m.key, m.value)
		if !ok {
			return &fetchedURL{Where: m.key, URL: "(a value the scan could not read)"}
		}
		if len(found) > 0 {
			return &found[0]
		}
	}
	return nil
}

// mediaKey says whether key names content: one of its words (split at
// '_', '-' and a lower-case letter before an upper-case one, as in
// "fileUri") is one of mediaKeyWords, and its last is not "name" (a
// filename labels a file; OpenCode's are an MCP resource's file:// URI).
func mediaKey(key string) bool { return mediaKeyBytes([]byte(key)) }

// remoteURL says whether s reads as a URL with a scheme ("https://…",
// "gs://…", "file://…") or a scheme-relative one ("//host/…").
func remoteURL(s string) bool {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "//") {
		return true
	}
	i := strings.Index(s, "://")
	if i < 1 || i > 32 {
		return false
	}
	for j, c := range s[:i] {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (j == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-')) {
			return false
		}
	}
	return true
}

// fetchable says whether the provider would fetch content at s: anything
// but an empty string and a data: URL (the content itself).
func fetchable(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && !strings.HasPrefix(strings.ToLower(s), "data:")
}

// refuseFetch is the failure for a request with content the provider
// would fetch by URL for a harness without the network.
func refuseFetch(u *fetchedURL) *failure {
	url := u.URL
	if len(url) > 120 {
		url = url[:120] + "…"
	}
	return &failure{Status: http.StatusBadRequest, Kind: failInvalid, Message: "gateway: the request has the provider fetch " +
		strconv.Quote(url) + " (" + u.Where + ") for a harness without the network: send the content itself (base64, or a data: URL), " +
		"or give the harness the network (network.egress: host)"}
}
