package dialect

import "github.com/harnessd/harnessd/internal/jsonlist"

// A Gemini request's contents, parts and function declarations are read
// one element at a time, and an element none of whose keys can name a
// field (which translates to nothing) is neither decoded nor kept: decoded
// whole, 6,000 empty contents or parts ({},, 18 KB) cost 1 MiB (58× the
// body), 6,000 empty function declarations 1.9 MiB (111×).

// geminiPartList is a content's parts.
type geminiPartList []geminiPart

// UnmarshalJSON reads the parts of b, each with its place.
func (l *geminiPartList) UnmarshalJSON(b []byte) error {
	ps, err := jsonlist.Read(*l, b, []string{"text", "thought", "functionCall", "functionResponse", "inlineData"},
		func(p *geminiPart) *int { return &p.index })
	*l = ps
	return err
}

// geminiContentList is a request's contents.
type geminiContentList []geminiContent

// UnmarshalJSON reads the contents of b, each with its place.
func (l *geminiContentList) UnmarshalJSON(b []byte) error {
	cs, err := jsonlist.Read(*l, b, []string{"role", "parts"}, func(c *geminiContent) *int { return &c.index })
	if n := jsonlist.Count(b); err == nil && len(cs) == 0 && n > 0 {
		cs = append(cs, geminiContent{index: n - 1}) // a list of contents, though none says anything
	}
	*l = cs
	return err
}

// geminiDeclList is a tool's function declarations.
type geminiDeclList []geminiDecl

// UnmarshalJSON reads the declarations of b.
func (l *geminiDeclList) UnmarshalJSON(b []byte) error {
	ds, err := jsonlist.Read(*l, b, []string{"name", "description", "parameters", "parametersJsonSchema"},
		func(d *geminiDecl) *int { return &d.index })
	*l = ds
	return err
}
