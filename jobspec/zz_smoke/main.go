package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/drover-project/drover/jobspec"
)

func main() {
	j, err := jobspec.ParseFile(os.Args[1], jobspec.Options{Env: os.Environ()})
	if err != nil {
		fmt.Println("ERR:", err)
		return
	}
	b, _ := json.MarshalIndent(j, "", " ")
	fmt.Println(string(b))
}
