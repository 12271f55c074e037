package repo

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/stampede-guard/api/cache"
)

// verify decodes a cached product and checks it is product id. A cached
// "absent" is valid as it is.
func verify(res cache.Result, id int64) (Product, error) {
	if res.Absent {
		return Product{}, nil
	}
	var pr Product
	dec := json.NewDecoder(bytes.NewReader(res.Value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pr); err != nil {
		return Product{}, fmt.Errorf("decode cached product %d: %w", id, err)
	}
	if pr.ID != id {
		return Product{}, fmt.Errorf("cached entry of product %d holds product %d", id, pr.ID)
	}
	return pr, nil
}
