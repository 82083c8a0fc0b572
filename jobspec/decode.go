package jobspec

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// This file holds the reflection-driven decoder. It maps HCL bodies onto the
// nomad/api structs using their `hcl:"name,kind"` tags:
//   - "x" or "x,optional": attribute x (all attributes are optional here)
//   - "x,block":           block x; the Go type picks the shape (see blockShape)
//   - "x,label" / ",label": block label, in field order
// Fields without an hcl tag, or with other kinds, are never set from HCL.

type fieldKind int

const (
	fieldAttr fieldKind = iota
	fieldBlock
	fieldLabel
)

// field is one tagged struct field.
type field struct {
	name  string
	kind  fieldKind
	index int
}

// structInfo is the tagged fields of one struct type, by kind.
type structInfo struct {
	attrs, blocks, labels []field
}

// blockShape says how a block-tagged field stores its blocks.
type blockShape int

const (
	shapeSingle     blockShape = iota // *T or T: at most one block
	shapeList                         // []*T or []T: any number of blocks
	shapeLabeledMap                   // map[string]*T: keyed by the first label
	shapeFlatMap                      // map[string]string etc.: block of attributes or a map attribute
	shapeOpaque                       // map[string]any: free-form body (driver config)
	shapeInvalid
)

var (
	infoCache   sync.Map // reflect.Type -> *structInfo
	schemaCache sync.Map // reflect.Type -> *hcl.BodySchema
)

// infoFor returns the tagged fields of struct type t.
func infoFor(t reflect.Type) *structInfo {
	if v, ok := infoCache.Load(t); ok {
		return v.(*structInfo)
	}
	info := &structInfo{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("hcl")
		if !ok || !f.IsExported() {
			continue
		}
		name, kind, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		switch kind {
		case "", "optional":
			info.attrs = append(info.attrs, field{name, fieldAttr, i})
		case "block":
			info.blocks = append(info.blocks, field{name, fieldBlock, i})
		case "label":
			info.labels = append(info.labels, field{name, fieldLabel, i})
		}
	}
	infoCache.Store(t, info)
	return info
}

// structElem returns the struct type behind T or *T, or nil.
func structElem(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && t != durationType {
		return t
	}
	return nil
}

// shapeOf classifies a block field's Go type and returns its element struct
// type for struct-valued shapes.
func shapeOf(t reflect.Type) (blockShape, reflect.Type) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Struct:
		if s := structElem(t); s != nil {
			return shapeSingle, s
		}
	case reflect.Slice:
		if s := structElem(t.Elem()); s != nil {
			return shapeList, s
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return shapeInvalid, nil
		}
		if s := structElem(t.Elem()); s != nil {
			return shapeLabeledMap, s
		}
		if t.Elem().Kind() == reflect.Interface {
			return shapeOpaque, nil
		}
		return shapeFlatMap, nil
	}
	return shapeInvalid, nil
}

// labelNames returns the label names a block of struct type s must carry.
func labelNames(s reflect.Type) []string {
	var names []string
	for _, l := range infoFor(s).labels {
		n := l.name
		if n == "" {
			n = "name"
		}
		names = append(names, n)
	}
	return names
}

// schemaFor builds (and caches) the body schema of struct type t, including
// any extension attributes/blocks.
func schemaFor(t reflect.Type) *hcl.BodySchema {
	if v, ok := schemaCache.Load(t); ok {
		return v.(*hcl.BodySchema)
	}
	info := infoFor(t)
	schema := &hcl.BodySchema{}
	for _, f := range info.attrs {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: f.name})
	}
	for _, f := range info.blocks {
		shape, elem := shapeOf(t.Field(f.index).Type)
		hdr := hcl.BlockHeaderSchema{Type: f.name}
		switch shape {
		case shapeSingle, shapeList:
			hdr.LabelNames = labelNames(elem)
		case shapeLabeledMap:
			hdr.LabelNames = labelNames(elem)
			if len(hdr.LabelNames) == 0 {
				hdr.LabelNames = []string{"name"}
			}
		case shapeFlatMap, shapeOpaque:
			schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: f.name})
		case shapeInvalid:
			continue
		}
		schema.Blocks = append(schema.Blocks, hdr)
	}
	if ext := extensionFor(t); ext != nil {
		schema.Attributes = append(schema.Attributes, ext.attrs...)
		schema.Blocks = append(schema.Blocks, ext.blocks...)
	}
	schemaCache.Store(t, schema)
	return schema
}

// decoder decodes an (already dynblock-expanded) job body.
type decoder struct {
	ctx    *hcl.EvalContext
	path   string
	bodies map[int]*hclsyntax.Body // every syntax body of the file, by start offset
}

// decodeBody decodes body into the struct value rv (addressable). Unknown
// attributes and blocks are errors. Decoding continues past errors so that
// one run reports as many problems as possible.
func (d *decoder) decodeBody(body hcl.Body, rv reflect.Value) hcl.Diagnostics {
	t := rv.Type()
	content, diags := body.Content(schemaFor(t))
	if content == nil {
		return diags
	}
	info := infoFor(t)
	for _, f := range info.attrs {
		if a, ok := content.Attributes[f.name]; ok {
			diags = append(diags, d.decodeAttr(a, rv.Field(f.index))...)
		}
	}
	byType := map[string]hcl.Blocks{}
	for _, b := range content.Blocks {
		byType[b.Type] = append(byType[b.Type], b)
	}
	for _, f := range info.blocks {
		diags = append(diags, d.decodeBlockField(f, rv.Field(f.index), byType[f.name], content.Attributes[f.name])...)
	}
	if ext := extensionFor(t); ext != nil && ext.apply != nil {
		diags = append(diags, ext.apply(d, content, rv)...)
	}
	return diags
}

// decodeAttr evaluates one attribute and stores it into fv.
func (d *decoder) decodeAttr(a *hcl.Attribute, fv reflect.Value) hcl.Diagnostics {
	val, diags := evalExpr(a.Expr, d.ctx)
	if diags.HasErrors() {
		return diags
	}
	return append(diags, assign(val, fv, a.Name, a.Expr.Range())...)
}

// decodeBlockField stores the blocks (and, for map shapes, the same-named
// attribute) of one block-tagged field.
func (d *decoder) decodeBlockField(f field, fv reflect.Value, blocks hcl.Blocks, attr *hcl.Attribute) hcl.Diagnostics {
	shape, elem := shapeOf(fv.Type())
	switch shape {
	case shapeSingle:
		return d.decodeSingle(f, fv, elem, blocks)
	case shapeList:
		return d.decodeList(fv, elem, blocks)
	case shapeLabeledMap:
		return d.decodeLabeledMap(fv, elem, blocks)
	case shapeFlatMap, shapeOpaque:
		return d.decodeMapField(f, fv, shape, blocks, attr)
	}
	return nil
}

func duplicateBlock(name string, b *hcl.Block) *hcl.Diagnostic {
	return errDiag(b.DefRange.Ptr(), fmt.Sprintf("Duplicate %s block", name),
		fmt.Sprintf("Only one %q block is allowed here.", name))
}

func (d *decoder) decodeSingle(f field, fv reflect.Value, elem reflect.Type, blocks hcl.Blocks) hcl.Diagnostics {
	if len(blocks) == 0 {
		return nil
	}
	var diags hcl.Diagnostics
	for _, extra := range blocks[1:] {
		diags = append(diags, duplicateBlock(f.name, extra))
	}
	ptr := reflect.New(elem)
	diags = append(diags, d.decodeBlock(blocks[0], ptr.Elem())...)
	setStructOrPtr(fv, ptr)
	return diags
}

func (d *decoder) decodeList(fv reflect.Value, elem reflect.Type, blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks {
		ptr := reflect.New(elem)
		diags = append(diags, d.decodeBlock(b, ptr.Elem())...)
		item := reflect.New(fv.Type().Elem()).Elem()
		setStructOrPtr(item, ptr)
		fv.Set(reflect.Append(fv, item))
	}
	return diags
}

func (d *decoder) decodeLabeledMap(fv reflect.Value, elem reflect.Type, blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks {
		if fv.IsNil() {
			fv.Set(reflect.MakeMap(fv.Type()))
		}
		key := reflect.ValueOf(b.Labels[0]).Convert(fv.Type().Key())
		if fv.MapIndex(key).IsValid() {
			diags = append(diags, errDiag(b.LabelRanges[0].Ptr(), fmt.Sprintf("Duplicate %s block", b.Type),
				fmt.Sprintf("A %s block labeled %q was already defined.", b.Type, b.Labels[0])))
			continue
		}
		ptr := reflect.New(elem)
		diags = append(diags, d.decodeBlock(b, ptr.Elem())...)
		item := reflect.New(fv.Type().Elem()).Elem()
		setStructOrPtr(item, ptr)
		fv.SetMapIndex(key, item)
	}
	return diags
}

// decodeMapField handles map-typed fields written either as `name { k = v }`
// or as `name = { k = v }` (but not both).
func (d *decoder) decodeMapField(f field, fv reflect.Value, shape blockShape, blocks hcl.Blocks, attr *hcl.Attribute) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if attr != nil {
		if len(blocks) > 0 {
			return hcl.Diagnostics{errDiag(blocks[0].DefRange.Ptr(), fmt.Sprintf("Duplicate %s", f.name),
				fmt.Sprintf("%q is set both as an argument (at %s) and as a block.", f.name, attr.NameRange))}
		}
		return d.decodeAttr(attr, fv)
	}
	if len(blocks) == 0 {
		return nil
	}
	for _, extra := range blocks[1:] {
		diags = append(diags, duplicateBlock(f.name, extra))
	}
	if shape == shapeOpaque {
		m, dd := d.decodeOpaque(blocks[0].Body)
		fv.Set(reflect.ValueOf(m).Convert(fv.Type()))
		return append(diags, dd...)
	}
	return append(diags, d.decodeFlatMap(blocks[0].Body, fv)...)
}

// decodeFlatMap decodes a block of plain attributes into a map field; null
// attributes are skipped. The attributes are read through body.Content
// with the names the syntax body holds, not JustAttributes: inside a
// `dynamic` block's content only Content gives the expressions the
// iterator (JustAttributes of dynblock's bodies passes them through
// unwrapped, and `env { Q = group.value.q }` would not see `group`).
func (d *decoder) decodeFlatMap(body hcl.Body, fv reflect.Value) hcl.Diagnostics {
	attrs, diags := d.plainAttributes(body)
	if fv.IsNil() {
		fv.Set(reflect.MakeMap(fv.Type()))
	}
	for _, name := range sortedKeys(attrs) {
		a := attrs[name]
		val, dd := evalExpr(a.Expr, d.ctx)
		diags = append(diags, dd...)
		if dd.HasErrors() || val.IsNull() {
			continue
		}
		item := reflect.New(fv.Type().Elem()).Elem()
		diags = append(diags, assign(val, item, name, a.Expr.Range())...)
		fv.SetMapIndex(reflect.ValueOf(name).Convert(fv.Type().Key()), item)
	}
	return diags
}

// decodeBlock sets the label fields of sv from b, then decodes b's body.
func (d *decoder) decodeBlock(b *hcl.Block, sv reflect.Value) hcl.Diagnostics {
	for i, l := range infoFor(sv.Type()).labels {
		if i >= len(b.Labels) {
			break
		}
		lv := sv.Field(l.index)
		if lv.Kind() == reflect.Pointer {
			lv.Set(reflect.New(lv.Type().Elem()))
			lv = lv.Elem()
		}
		if lv.Kind() == reflect.String {
			lv.SetString(b.Labels[i])
		}
	}
	return d.decodeBody(b.Body, sv)
}

// setStructOrPtr stores the *T ptr into dst, which is either *T or T.
func setStructOrPtr(dst, ptr reflect.Value) {
	if dst.Kind() == reflect.Pointer {
		dst.Set(ptr)
	} else {
		dst.Set(ptr.Elem())
	}
}

// plainAttributes returns the attributes of a body that may hold only
// attributes (see decodeFlatMap); blocks in it are errors.
func (d *decoder) plainAttributes(body hcl.Body) (hcl.Attributes, hcl.Diagnostics) {
	schema := d.opaqueSchema(body)
	if schema == nil || len(schema.Blocks) > 0 {
		return body.JustAttributes() // reports the blocks
	}
	content, diags := body.Content(&hcl.BodySchema{Attributes: schema.Attributes})
	if content == nil {
		return nil, diags
	}
	return content.Attributes, diags
}
