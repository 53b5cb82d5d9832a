# Charts of a `clusterpipe compare` run, written by clusterpipe.
# Redraw by hand: cd to this directory, then `gnuplot charts.gp`.
if (!exists('suffix')) suffix = ''

# setup, call type, redis / twemproxy / client / total CPU-seconds
$cpu << EOD
"twemproxy" "clients=10" 0.45 0.59 0.216002 1.256
"twemproxy" "clients=100" 0.23 0.49 0.184214 0.904214
"twemproxy" "clients=1000" 0.18 0.74 0.222807 1.14281
"twemproxy" "clients=3000" 0.22 1.08 0.322793 1.62279
"cluster" "clients=10" 0.27 0 0.10414 0.37414
"cluster" "clients=100" 0.28 0 0.127999 0.407999
"cluster" "clients=1000" 0.33 0 0.254814 0.584814
"cluster" "clients=3000" 0.59 0 0.432647 1.02265
EOD

# setup, call type, ops/s med min max, p99 us med min max, colour
$perf << EOD
"twemproxy" "clients=10" 130627 121524 134662 3055.62 2793.47 3710.98 14245634
"twemproxy" "clients=100" 183589 182266 204005 10518.5 9535.49 11173.9 14245634
"twemproxy" "clients=1000" 123726 117181 146193 115081 94634 330301 14245634
"twemproxy" "clients=3000" 99080.8 81650.9 103407 324010 317719 491782 14245634
"cluster" "clients=10" 526821 502763 544375 1904.64 1888.26 2203.65 1810039
"cluster" "clients=100" 479567 394883 518448 18284.5 17236 26279.9 1810039
"cluster" "clients=1000" 256933 214287 333987 242745 157811 269484 1810039
"cluster" "clients=3000" 141055 135999 155075 460325 422576 510657 1810039
EOD

$lat0 << EOD
-0 47.89
0.25 431.104
0.5 636.928
0.75 858.112
1 1118.21
1.25 1437.7
1.5 2121.73
1.75 2957.31
2 3710.98
2.25 4243.46
2.5 4866.05
2.75 5783.55
3 7356.42
3.25 7913.47
3.5 8683.52
3.75 9273.34
4 9273.34
4.25 9721.62
4.5 9721.62
4.75 9721.62
5 9721.62
EOD
$lat1 << EOD
-0 79.188
0.25 4538.37
0.5 5586.94
0.75 6438.91
1 7389.18
1.25 8273.92
1.5 9076.74
1.75 9732.1
2 10518.5
2.25 11239.4
2.5 11632.6
2.75 12484.6
3 12681.2
3.25 13008.9
3.5 13074.4
3.75 13074.4
4 13140
4.25 13140
4.5 13926.4
4.75 13926.4
5 13926.4
EOD
$lat2 << EOD
-0 297.427
0.25 67371
0.5 79953.9
0.75 93585.4
1 100401
1.25 105120
1.5 109314
1.75 112984
2 115081
2.25 117703
2.5 119276
2.75 121897
3 122421
3.25 126091
3.5 126616
3.75 127140
4 127140
4.25 128188
4.5 128188
4.75 128188
5 128188
EOD
$lat3 << EOD
-0 863.636
0.25 179831
0.5 227017
0.75 256377
1 275775
1.25 288358
1.5 296747
1.75 303038
2 324010
2.25 324010
2.5 324010
2.75 336593
3 412090
3.25 414188
3.5 414188
3.75 414188
4 414188
4.25 414188
4.5 414188
4.75 414188
5 414188
EOD
$lat4 << EOD
-0 17.371
0.25 414.72
0.5 661.504
0.75 919.552
1 1183.74
1.25 1388.54
1.5 1585.15
1.75 1888.26
2 2203.65
2.25 2514.94
2.5 2990.08
2.75 3137.54
3 4055.04
3.25 4210.69
3.5 5619.71
3.75 5914.62
4 5914.62
4.25 5931.34
4.5 5931.34
4.75 5931.34
5 5931.34
EOD
$lat5 << EOD
-0 17.061
0.25 3776.51
0.5 6045.7
0.75 8945.66
1 10977.3
1.25 13598.7
1.5 15040.5
1.75 16220.2
2 17236
2.25 19726.3
2.5 22872.1
2.75 23003.1
3 23003.1
3.25 23527.4
3.5 23920.6
3.75 23920.6
4 23920.6
4.25 23920.6
4.5 23920.6
4.75 23920.6
5 23920.6
EOD
$lat6 << EOD
-0 16.459
0.25 43647
0.5 83623.9
0.75 105644
1 142082
1.25 175636
1.5 192414
1.75 213385
2 242745
2.25 279970
2.5 279970
2.75 279970
3 281909
3.25 281909
3.5 281909
3.75 281909
4 281909
4.25 281909
4.5 281909
4.75 281909
5 281909
EOD
$lat7 << EOD
-0 959.388
0.25 292553
0.5 338690
0.75 365953
1 380633
1.25 403702
1.5 405799
1.75 409993
2 422576
2.25 422576
2.5 424673
2.75 424673
3 424673
3.25 424673
3.5 435159
3.75 442842
4 442842
4.25 442842
4.5 442842
4.75 442842
5 442842
EOD

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 900,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 900,520 background rgb 'white' noenhanced
}
set output 'cpu.png'.suffix
reset
set datafile missing '?'
set title 'CPU-seconds by component per case (lower is better)'
set ylabel 'CPU-seconds (user + system)'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set grid ytics
set bmargin 4
set key top right
plot $cpu using 3:xtic(strcol(1)."\n".strcol(2)) title 'redis-server' lc rgb '#e41a1c', \
     '' using 4 title 'twemproxy' lc rgb '#ff7f00', \
     '' using 5 title 'client (clusterpipe)' lc rgb '#377eb8', \
     '' using 0:6:(sprintf('%.2f', $6)) with labels offset 0,0.8 notitle
unset output

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 1000,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 1000,520 background rgb 'white' noenhanced
}
set output 'throughput_p99.png'.suffix
reset
set datafile missing '?'
set multiplot layout 1,2 title 'Throughput and p99 latency per case (bars: min-max over repeats)'
set style fill solid 0.85 border -1
set boxwidth 0.6
set xrange [-0.6:7.6]
set yrange [0:*]
set grid ytics
set bmargin 4
set title 'throughput, ops/s (higher is better)'
plot $perf using 0:3:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:3:4:5 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
set title 'p99 latency, us (lower is better)'
plot $perf using 0:6:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:6:7:8 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
unset multiplot
unset output

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 900,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 900,520 background rgb 'white' noenhanced
}
set output 'latency.png'.suffix
reset
set title 'Latency by percentile (median run of each case)'
set xlabel 'percentile'
set ylabel 'latency, us (log scale)'
set logscale y
set grid xtics ytics mytics
set key top left
set xrange [0:5]
set xtics ('0' 0, '50' 0.30103, '90' 1, '99' 2, '99.9' 3, '99.99' 4, '99.999' 5, '99.9999' 6)
plot $lat0 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy clients=10', \
     $lat1 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy clients=100', \
     $lat2 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy clients=1000', \
     $lat3 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy clients=3000', \
     $lat4 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster clients=10', \
     $lat5 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster clients=100', \
     $lat6 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster clients=1000', \
     $lat7 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster clients=3000'
unset output

set terminal svg size 900,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'cpu.svg'.suffix
reset
set datafile missing '?'
set title 'CPU-seconds by component per case (lower is better)'
set ylabel 'CPU-seconds (user + system)'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set grid ytics
set bmargin 4
set key top right
plot $cpu using 3:xtic(strcol(1)."\n".strcol(2)) title 'redis-server' lc rgb '#e41a1c', \
     '' using 4 title 'twemproxy' lc rgb '#ff7f00', \
     '' using 5 title 'client (clusterpipe)' lc rgb '#377eb8', \
     '' using 0:6:(sprintf('%.2f', $6)) with labels offset 0,0.8 notitle
unset output

set terminal svg size 1000,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'throughput_p99.svg'.suffix
reset
set datafile missing '?'
set multiplot layout 1,2 title 'Throughput and p99 latency per case (bars: min-max over repeats)'
set style fill solid 0.85 border -1
set boxwidth 0.6
set xrange [-0.6:7.6]
set yrange [0:*]
set grid ytics
set bmargin 4
set title 'throughput, ops/s (higher is better)'
plot $perf using 0:3:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:3:4:5 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
set title 'p99 latency, us (lower is better)'
plot $perf using 0:6:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:6:7:8 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
unset multiplot
unset output

set terminal svg size 900,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'latency.svg'.suffix
reset
set title 'Latency by percentile (median run of each case)'
set xlabel 'percentile'
set ylabel 'latency, us (log scale)'
set logscale y
set grid xtics ytics mytics
set key top left
set xrange [0:5]
set xtics ('0' 0, '50' 0.30103, '90' 1, '99' 2, '99.9' 3, '99.99' 4, '99.999' 5, '99.9999' 6)
plot $lat0 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy clients=10', \
     $lat1 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy clients=100', \
     $lat2 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy clients=1000', \
     $lat3 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy clients=3000', \
     $lat4 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster clients=10', \
     $lat5 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster clients=100', \
     $lat6 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster clients=1000', \
     $lat7 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster clients=3000'
unset output
