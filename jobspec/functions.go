package jobspec

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/go-cty-funcs/cidr"
	"github.com/hashicorp/go-cty-funcs/collection"
	"github.com/hashicorp/go-cty-funcs/crypto"
	"github.com/hashicorp/go-cty-funcs/encoding"
	"github.com/hashicorp/go-cty-funcs/filesystem"
	"github.com/hashicorp/go-cty-funcs/uuid"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	ctyyaml "github.com/zclconf/go-cty-yaml"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// fsFunctions are the functions that read the file system of the machine
// that parses (or reveal its paths); Options.NoFS disables them.
var fsFunctions = []string{"abspath", "file", "filebase64", "fileescaped", "fileexists", "fileset", "pathexpand"}

// functions returns the function table available to jobspec expressions:
// the functions Nomad documents for HCL2 job files. As in Nomad, relative
// paths of the file functions resolve against the current working
// directory of the parsing process (not the job file's directory), and
// there is deliberately no env() function and no timestamp().
func functions() map[string]function.Function {
	fns := map[string]function.Function{
		"abs":             stdlib.AbsoluteFunc,
		"abspath":         filesystem.AbsPathFunc,
		"base64decode":    base64DecodeFunc,
		"base64encode":    base64EncodeFunc,
		"basename":        filesystem.BasenameFunc,
		"bcrypt":          crypto.BcryptFunc,
		"can":             tryfunc.CanFunc,
		"ceil":            stdlib.CeilFunc,
		"chomp":           stdlib.ChompFunc,
		"chunklist":       stdlib.ChunklistFunc,
		"cidrhost":        cidr.HostFunc,
		"cidrnetmask":     cidr.NetmaskFunc,
		"cidrsubnet":      cidr.SubnetFunc,
		"cidrsubnets":     cidr.SubnetsFunc,
		"coalesce":        collection.CoalesceFunc, // skips empty strings too, as Nomad documents
		"coalescelist":    stdlib.CoalesceListFunc,
		"compact":         stdlib.CompactFunc,
		"concat":          stdlib.ConcatFunc,
		"contains":        stdlib.ContainsFunc,
		"convert":         typeexpr.ConvertFunc,
		"csvdecode":       stdlib.CSVDecodeFunc,
		"dirname":         filesystem.DirnameFunc,
		"distinct":        stdlib.DistinctFunc,
		"element":         stdlib.ElementFunc,
		"file":            filesystem.MakeFileFunc("", false),
		"filebase64":      filesystem.MakeFileFunc("", true),
		"fileescaped":     fileEscapedFunc,
		"fileexists":      filesystem.MakeFileExistsFunc(""),
		"fileset":         filesystem.MakeFileSetFunc(""),
		"flatten":         stdlib.FlattenFunc,
		"floor":           stdlib.FloorFunc,
		"format":          stdlib.FormatFunc,
		"formatdate":      stdlib.FormatDateFunc,
		"formatlist":      stdlib.FormatListFunc,
		"indent":          stdlib.IndentFunc,
		"index":           indexFunc,
		"join":            stdlib.JoinFunc,
		"jsondecode":      stdlib.JSONDecodeFunc,
		"jsonencode":      stdlib.JSONEncodeFunc,
		"keys":            stdlib.KeysFunc,
		"length":          lengthFunc,
		"log":             stdlib.LogFunc,
		"lookup":          stdlib.LookupFunc,
		"lower":           stdlib.LowerFunc,
		"max":             stdlib.MaxFunc,
		"md5":             crypto.Md5Func,
		"merge":           stdlib.MergeFunc,
		"min":             stdlib.MinFunc,
		"parseint":        stdlib.ParseIntFunc,
		"pathexpand":      filesystem.PathExpandFunc,
		"pow":             stdlib.PowFunc,
		"range":           stdlib.RangeFunc,
		"regex":           stdlib.RegexFunc,
		"regexall":        stdlib.RegexAllFunc,
		"regex_replace":   stdlib.RegexReplaceFunc,
		"regexreplace":    stdlib.RegexReplaceFunc,
		"replace":         stdlib.ReplaceFunc,
		"reverse":         reverseFunc,
		"rsadecrypt":      crypto.RsaDecryptFunc,
		"setintersection": stdlib.SetIntersectionFunc,
		"setproduct":      stdlib.SetProductFunc,
		"setsubtract":     stdlib.SetSubtractFunc,
		"setunion":        stdlib.SetUnionFunc,
		"sha1":            crypto.Sha1Func,
		"sha256":          crypto.Sha256Func,
		"sha512":          crypto.Sha512Func,
		"signum":          stdlib.SignumFunc,
		"slice":           stdlib.SliceFunc,
		"sort":            stdlib.SortFunc,
		"split":           stdlib.SplitFunc,
		"strlen":          stdlib.StrlenFunc,
		"strrev":          stdlib.ReverseFunc,
		"substr":          stdlib.SubstrFunc,
		"timeadd":         stdlib.TimeAddFunc,
		"title":           stdlib.TitleFunc,
		"tobool":          stdlib.MakeToFunc(cty.Bool),
		"tolist":          stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":           stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"tonumber":        stdlib.MakeToFunc(cty.Number),
		"toset":           stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tostring":        stdlib.MakeToFunc(cty.String),
		"trim":            stdlib.TrimFunc,
		"trimprefix":      stdlib.TrimPrefixFunc,
		"trimspace":       stdlib.TrimSpaceFunc,
		"trimsuffix":      stdlib.TrimSuffixFunc,
		"try":             tryfunc.TryFunc,
		"upper":           stdlib.UpperFunc,
		"urlencode":       encoding.URLEncodeFunc,
		"uuidv4":          uuid.V4Func,
		"uuidv5":          uuid.V5Func,
		"values":          stdlib.ValuesFunc,
		"yamldecode":      ctyyaml.YAMLDecodeFunc,
		"yamlencode":      ctyyaml.YAMLEncodeFunc,
		"zipmap":          stdlib.ZipmapFunc,
	}
	return fns
}

// maxServerBcryptCost bounds bcrypt's cost when a server parses a job for
// a client (Options.NoFS): each step doubles the work, and cost 31 would
// keep a server busy for days.
const maxServerBcryptCost = 12

// disableFS replaces the file system functions of fns by ones that fail,
// and bounds bcrypt's cost: what a server parsing for a client needs.
func disableFS(fns map[string]function.Function) {
	for _, name := range fsFunctions {
		fns[name] = disabledFSFunc(name)
	}
	fns["bcrypt"] = boundedBcryptFunc
}

// boundedBcryptFunc is bcrypt(str, cost) refusing a cost above
// maxServerBcryptCost.
var boundedBcryptFunc = function.New(&function.Spec{
	Params:   []function.Parameter{{Name: "str", Type: cty.String}},
	VarParam: &function.Parameter{Name: "cost", Type: cty.Number},
	Type:     function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if len(args) > 1 {
			if cost, _ := args[1].AsBigFloat().Int64(); cost > maxServerBcryptCost {
				return cty.NilVal, fmt.Errorf("a bcrypt cost above %d is refused when the server parses the job, got %d", maxServerBcryptCost, cost)
			}
		}
		return crypto.BcryptFunc.Call(args)
	},
})

// disabledFSFunc is name() when reading files is not allowed (Options.NoFS).
func disabledFSFunc(name string) function.Function {
	return function.New(&function.Spec{
		VarParam: &function.Parameter{Name: "args", Type: cty.DynamicPseudoType, AllowNull: true},
		Type:     function.StaticReturnType(cty.DynamicPseudoType),
		Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
			return cty.NilVal, fmt.Errorf("%s() is disabled: the jobspec is parsed without file system access", name)
		},
	})
}

// reverseFunc is reverse(seq): a string's characters or a list's, tuple's
// or set's elements in reverse order.
var reverseFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "seq", Type: cty.DynamicPseudoType}},
	Type: func(args []cty.Value) (cty.Type, error) {
		if args[0].Type() == cty.String {
			return cty.String, nil
		}
		return stdlib.ReverseListFunc.ReturnTypeForValues(args)
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if args[0].Type() == cty.String {
			return stdlib.ReverseFunc.Call(args)
		}
		return stdlib.ReverseListFunc.Call(args)
	},
})

// lengthFunc is length(value): the number of characters (grapheme
// clusters) of a string, of attributes of an object, or of elements of a
// list, tuple, set or map, as Nomad documents it (`length({"a" = "b"})`
// is 1; cty's own length takes no strings, objects or sets).
var lengthFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true, AllowUnknown: true, AllowMarked: true}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v := args[0]
		switch ty := v.Type(); {
		case ty == cty.String:
			return stdlib.StrlenFunc.Call(args)
		case ty.IsObjectType():
			return cty.NumberIntVal(int64(len(ty.AttributeTypes()))), nil
		case ty.IsSetType() && v.IsKnown() && !v.IsMarked():
			return cty.NumberIntVal(int64(v.LengthInt())), nil
		}
		return stdlib.LengthFunc.Call(args)
	},
})

// indexFunc is index(collection, key): the element at an index of a list
// or tuple, or at a key of a map or object, as Nomad documents it
// (`index({"a"=1, "c"=2}, "c")` is 2; cty's own index takes no objects).
var indexFunc = function.New(&function.Spec{
	Params: []function.Parameter{
		{Name: "collection", Type: cty.DynamicPseudoType},
		{Name: "key", Type: cty.DynamicPseudoType},
	},
	Type: func(args []cty.Value) (cty.Type, error) {
		if ty := args[0].Type(); ty.IsObjectType() {
			key, err := objectKey(args[0], args[1])
			if err != nil {
				return cty.NilType, err
			}
			return ty.AttributeType(key), nil
		}
		return stdlib.IndexFunc.ReturnTypeForValues(args)
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if args[0].Type().IsObjectType() {
			key, err := objectKey(args[0], args[1])
			if err != nil {
				return cty.NilVal, err
			}
			return args[0].GetAttr(key), nil
		}
		return stdlib.IndexFunc.Call(args)
	},
})

// objectKey checks that key names an attribute of the object obj.
func objectKey(obj, key cty.Value) (string, error) {
	if !key.IsKnown() || key.IsNull() || key.Type() != cty.String {
		return "", fmt.Errorf("key for an object must be a known string")
	}
	k := key.AsString()
	if !obj.Type().HasAttribute(k) {
		return "", fmt.Errorf("the object has no attribute %q", k)
	}
	return k, nil
}

// heredocEscaper escapes the template sequences of HCL: "${" and "%{".
var heredocEscaper = strings.NewReplacer("${", "$${", "%{", "%%{")

// fileEscapedFunc is fileescaped(path): file(path) with "${" and "%{"
// escaped, so the content reaches the job verbatim when used inside a
// heredoc or template string.
var fileEscapedFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "path", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		content, err := filesystem.File("", args[0])
		if err != nil {
			return cty.NilVal, err
		}
		return cty.StringVal(heredocEscaper.Replace(content.AsString())), nil
	},
})

var base64EncodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(base64.StdEncoding.EncodeToString([]byte(args[0].AsString()))), nil
	},
})

var base64DecodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		b, err := base64.StdEncoding.DecodeString(args[0].AsString())
		if err != nil {
			return cty.NilVal, fmt.Errorf("invalid base64: %w", err)
		}
		if !utf8.Valid(b) {
			return cty.NilVal, fmt.Errorf("decoded base64 is not valid UTF-8")
		}
		return cty.StringVal(string(b)), nil
	},
})
