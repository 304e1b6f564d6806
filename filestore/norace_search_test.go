//go:build !race

package filestore_test

const raceBuild = false
